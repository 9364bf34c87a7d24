// devplace: decides where each op of a training step should run. This
// build links no torch; the commands that need it run in devplace-learn
// (learn_main.cc), to which it hands them (cli/learned_commands.h).
#include "cli/devplace_app.h"

int main(int argc, char** argv) { return devplace::RunDevplace(argc, argv, nullptr); }
