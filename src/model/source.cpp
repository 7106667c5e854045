// WeightSources: memory-mapped safetensors directories and GGUF files, and in-memory tensors.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "omni/model/weights.hpp"

namespace omni::model {
namespace fs = std::filesystem;
namespace {

// A read-only private mapping of a whole file (nothing is copied: pages fault in on use).
class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> open(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return make_error(ErrorCode::kNotFound, path.string() + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return make_error(ErrorCode::kIo, path.string() + ": " + std::strerror(err));
    }
    auto file = std::make_unique<MappedFile>();
    file->size_ = static_cast<std::size_t>(st.st_size);
    if (file->size_ > 0) {
      void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        return make_error(ErrorCode::kIo, path.string() + ": mmap: " + std::strerror(err));
      }
      file->data_ = static_cast<const std::byte*>(p);
    }
    ::close(fd);
    return file;
  }
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  }
  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

class SafetensorsDir final : public WeightSource {
 public:
  const TensorView* find(std::string_view name) const override {
    const auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : it->second;
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& [k, v] : index_) out.push_back(k);
    return out;
  }
  std::string describe() const override {
    return dir_ + " (" + std::to_string(files_.size()) + " safetensors file" +
           (files_.size() == 1 ? "" : "s") + ")";
  }
  Status add_file(const fs::path& path) {
    auto mapped = MappedFile::open(path);
    if (!mapped) return std::move(mapped).error();
    auto header = parse_safetensors((*mapped)->bytes(), path.string());
    if (!header) return std::move(header).error();
    auto holder = std::make_unique<Shard>();
    holder->file = std::move(*mapped);
    holder->tensors = std::move(header->tensors);
    for (auto& t : holder->tensors) {
      if (index_.count(t.name) != 0) {
        return make_error(ErrorCode::kInvalidArgument, path.string() + ": tensor '" + t.name +
                                                           "' also in " + index_[t.name]->file);
      }
      index_[t.name] = &t;
    }
    files_.push_back(std::move(holder));
    return ok_status();
  }
  std::string dir_;

 private:
  struct Shard {
    std::unique_ptr<MappedFile> file;
    std::vector<TensorView> tensors;
  };
  std::vector<std::unique_ptr<Shard>> files_;
  std::map<std::string, const TensorView*> index_;
};

class GgufSource final : public WeightSource {
 public:
  const TensorView* find(std::string_view name) const override {
    const auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : it->second;
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& [k, v] : index_) out.push_back(k);
    return out;
  }
  std::string describe() const override { return path_; }
  const GgufHeader* gguf() const override { return &header_; }

  std::unique_ptr<MappedFile> file_;
  GgufHeader header_;
  std::map<std::string, const TensorView*> index_;
  std::string path_;
};

Result<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, path.string() + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The shard files an index names, in order.
Result<std::vector<fs::path>> index_shards(const fs::path& index_path) {
  auto text = read_text(index_path);
  if (!text) return std::move(text).error();
  boost::system::error_code ec;
  auto root = boost::json::parse(*text, ec);
  const boost::json::object* map = nullptr;
  if (!ec && root.is_object()) {
    if (const auto* wm = root.as_object().if_contains("weight_map"); wm && wm->is_object()) {
      map = &wm->as_object();
    }
  }
  if (!map) {
    return make_error(ErrorCode::kInvalidArgument,
                      index_path.string() + ": expected {\"weight_map\": {tensor: file}}");
  }
  std::set<std::string> files;
  for (const auto& [k, v] : *map) {
    if (!v.is_string() || v.as_string().find('/') != boost::json::string::npos) {
      return make_error(ErrorCode::kInvalidArgument, index_path.string() + ": weight_map['" +
                                                         std::string(k) +
                                                         "'] must name a file in the directory");
    }
    files.insert(std::string(v.as_string()));
  }
  std::vector<fs::path> out;
  for (const auto& f : files) out.push_back(index_path.parent_path() / f);
  return out;
}

}  // namespace

Result<std::unique_ptr<WeightSource>> open_safetensors_dir(const fs::path& dir) {
  auto source = std::make_unique<SafetensorsDir>();
  source->dir_ = dir.string();
  std::vector<fs::path> files;
  const fs::path index = dir / "model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(index, ec)) {
    auto shards = index_shards(index);
    if (!shards) return std::move(shards).error();
    files = std::move(*shards);
  } else {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".safetensors") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
  }
  if (ec) return make_error(ErrorCode::kNotFound, dir.string() + ": " + ec.message());
  if (files.empty())
    return make_error(ErrorCode::kNotFound, dir.string() + ": no *.safetensors files");
  for (const auto& f : files) {
    if (auto st = source->add_file(f); !st) return std::move(st).error();
  }
  return std::unique_ptr<WeightSource>(std::move(source));
}

Result<std::unique_ptr<WeightSource>> open_gguf(const fs::path& file) {
  auto mapped = MappedFile::open(file);
  if (!mapped) return std::move(mapped).error();
  auto header = parse_gguf((*mapped)->bytes(), file.string());
  if (!header) return std::move(header).error();
  auto source = std::make_unique<GgufSource>();
  source->file_ = std::move(*mapped);
  source->header_ = std::move(*header);
  source->path_ = file.string();
  for (const auto& t : source->header_.tensors) {
    if (source->index_.count(t.name) != 0) {
      return make_error(ErrorCode::kInvalidArgument,
                        file.string() + ": duplicate tensor '" + t.name + "'");
    }
    source->index_[t.name] = &t;
  }
  return std::unique_ptr<WeightSource>(std::move(source));
}

void MemorySource::add(std::string name, DType dtype, std::vector<std::int64_t> shape,
                       std::span<const std::byte> bytes) {
  auto owned = std::make_unique<Owned>();
  owned->bytes.assign(bytes.begin(), bytes.end());
  owned->view.name = std::move(name);
  owned->view.dtype = dtype;
  owned->view.shape = std::move(shape);
  owned->view.data = owned->bytes.data();
  owned->view.bytes = owned->bytes.size();
  owned->view.file = "memory";
  tensors_.push_back(std::move(owned));
}

const TensorView* MemorySource::find(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t->view.name == name) return &t->view;
  }
  return nullptr;
}

std::vector<std::string> MemorySource::names() const {
  std::vector<std::string> out;
  for (const auto& t : tensors_) out.push_back(t->view.name);
  return out;
}

Result<std::unique_ptr<LoadedModel>> load_model(const fs::path& path, bool check_finite) {
  auto model = std::make_unique<LoadedModel>();
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    auto text = read_text(path / "config.json");
    if (!text) return std::move(text).error();
    auto config = parse_config_json(*text, (path / "config.json").string());
    if (!config) return std::move(config).error();
    model->config = std::move(*config);
    auto source = open_safetensors_dir(path);
    if (!source) return std::move(source).error();
    model->source = std::move(*source);
    model->name =
        path.filename().empty() ? path.parent_path().filename().string() : path.filename().string();
    if (fs::exists(path / "tokenizer.json", ec))
      model->tokenizer_path = (path / "tokenizer.json").string();
  } else {
    if (path.extension() != ".gguf") {
      return make_error(ErrorCode::kInvalidArgument,
                        path.string() + ": expected a model directory or a .gguf file");
    }
    auto source = open_gguf(path);
    if (!source) return std::move(source).error();
    auto config = config_from_gguf(*(*source)->gguf(), path.string());
    if (!config) return std::move(config).error();
    model->config = std::move(*config);
    model->source = std::move(*source);
    model->name = path.stem().string();
    if (fs::exists(path.parent_path() / "tokenizer.json", ec)) {
      model->tokenizer_path = (path.parent_path() / "tokenizer.json").string();
    }
  }
  auto weights = bind_weights(model->config, *model->source, check_finite);
  if (!weights) return std::move(weights).error();
  model->weights = std::move(*weights);
  return model;
}

}  // namespace omni::model
