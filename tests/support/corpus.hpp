// The files of a fuzz target's corpus, for the unit tests that replay it: every regular file of
// `dir`, in name order (so a failure names the same file on every machine), read as bytes.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace omni::test_support {

struct CorpusFile {
  std::filesystem::path path;
  std::string bytes;
};

inline std::vector<CorpusFile> read_corpus(const std::filesystem::path& dir) {
  std::vector<CorpusFile> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    files.push_back({entry.path(), std::string((std::istreambuf_iterator<char>(in)),
                                               std::istreambuf_iterator<char>())});
  }
  std::sort(files.begin(), files.end(),
            [](const CorpusFile& a, const CorpusFile& b) { return a.path < b.path; });
  return files;
}

}  // namespace omni::test_support
