// tr-data: text corpora into token shards in llm.c's format, and their check.
#include "harness/lib/text/data_cli.h"

int main(int argc, char** argv) { return tr::text::data_main(argc, argv); }
