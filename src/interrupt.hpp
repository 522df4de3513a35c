// Ctrl-C and SIGTERM: the handler only records the signal; long-running loops (the batch
// pipeline, the atomic writer) poll interrupted() and stop cleanly, removing temp files.
#pragma once

namespace gpuconv::app {

void install_interrupt_handlers();  // SIGINT and SIGTERM; SIGXFSZ ignored (writes fail with EFBIG)
bool interrupted();
int interrupt_signal();                 // 0, SIGINT or SIGTERM
int interrupt_exit_code();              // 128 + the signal (130, 143); 0 when none
void reset_interrupt_for_testing();

}  // namespace gpuconv::app
