#pragma once
// `tr-data`: text corpora to token shards and back.
//   tr-data shards --out DIR [--corpus NAME | --corpus-dir DIR [--suffix S]] [--val-permille P] [--shard-tokens N]
//   tr-data check DIR [--print-val-bytes N]
// Exit 0 on success, 2 with one line for bad input (flags, corpus, shards).
namespace tr::text {

int data_main(int argc, char** argv);

}  // namespace tr::text
