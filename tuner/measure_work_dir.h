// The measurer's own work directory in the temp folder, and the sweep of those that killed
// tuners left behind. A SIGKILLed tuner cannot remove its tessera_measure_* folder; the next
// tuner on the machine does, once it can tell the owner is gone.
#pragma once

#include <string>

namespace tessera::tune {

/// Creates `parent`/tessera_measure_XXXXXX and writes into it an owner file naming this
/// process (pid, its start time and its pid namespace). Returns the path. Throws UserError
/// naming the path when the folder cannot be created.
std::string create_owned_work_dir(const std::string& parent);

/// Removes every `parent`/tessera_measure_* folder whose owner file names a process of this
/// pid namespace that no longer runs (a pid reused since has another start time). Folders
/// without a readable owner file (being created, or of another tessera version) and folders of
/// other pid namespaces (another container sharing the folder) are left alone. Returns how
/// many were removed; never throws (a folder that cannot be removed stays).
int remove_abandoned_work_dirs(const std::string& parent);

} // namespace tessera::tune
