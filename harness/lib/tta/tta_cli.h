#pragma once
// `tr-bench tta`: the time-to-accuracy task (tta_task.h) from the command line,
// with the model's recipe as the defaults of the training flags
// (train_flags.h). Exit 0 on success, 2 with one line for bad input.
namespace tr::bench {

// argv[0] is the subcommand name ("tta").
int tta_main(int argc, char** argv);

}  // namespace tr::bench
