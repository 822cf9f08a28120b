// tests/fuzz/make_corpus.cpp — the fuzzer's seed corpus from the IR tests:
// every raw string literal R"(...)" or R"delim(...)delim" in the given
// sources that holds a kernel is written to DIR/seed_NNNN.ir.
//
//   make_corpus DIR tests/ir/*.cpp
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: make_corpus DIR SOURCE...\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  int written = 0;
  for (int a = 2; a < argc; ++a) {
    std::ifstream in(argv[a]);
    if (!in) {
      std::fprintf(stderr, "make_corpus: cannot read %s\n", argv[a]);
      return 1;
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string src = buffer.str();
    for (size_t at = src.find("R\""); at != std::string::npos; at = src.find("R\"", at + 2)) {
      const size_t open = src.find('(', at);
      if (open == std::string::npos || open - at > 18) continue;
      const std::string delim = ")" + src.substr(at + 2, open - at - 2) + "\"";
      const size_t close = src.find(delim, open);
      if (close == std::string::npos) break;
      const std::string body = src.substr(open + 1, close - open - 1);
      if (body.find("kernel @") == std::string::npos) continue;
      char name[32];
      std::snprintf(name, sizeof name, "seed_%04d.ir", written++);
      std::ofstream(dir / name) << body;
    }
  }
  std::printf("make_corpus: wrote %d seed(s) to %s\n", written, dir.c_str());
  return written > 0 ? 0 : 1;
}
