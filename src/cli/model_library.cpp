// Loading a built model library and driving its C API.
#include "model_library.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <dlfcn.h>
#include <elf.h>

#include "tessera/graph/dtype.h"
#include "tessera/support/error.h"

namespace tessera::cli {

std::string model_dtype_name(int dtype) {
    std::optional<graph::DType> t = graph::dtype_from_abi(dtype);
    return t ? graph::dtype_name(*t) : "dtype " + std::to_string(dtype);
}

int64_t model_dtype_bytes(int dtype) {
    std::optional<graph::DType> t = graph::dtype_from_abi(dtype);
    return t ? static_cast<int64_t>(graph::dtype_size(*t)) : 0;
}

std::string describe(const ModelTensorInfo& t) {
    std::string s = model_dtype_name(t.dtype) + "[";
    for (size_t i = 0; i < t.shape.size(); ++i)
        s += (i ? "," : "") + std::to_string(t.shape[i]);
    return s + "]";
}

int64_t dense_bytes(const ModelTensorInfo& t) {
    int64_t n = model_dtype_bytes(t.dtype);
    for (int64_t d : t.shape)
        n *= d;
    return n;
}

namespace {

template <typename Fn>
void lookup(void* handle, const std::string& path, const char* name, Fn& fn, bool required = true) {
    dlerror();
    void* sym = dlsym(handle, name);
    if (!sym && required)
        throw UserError() << "'" << path << "' is not a tessera model library: it lacks " << name;
    fn = reinterpret_cast<Fn>(sym);
}

ModelTensorInfo copy_info(const TesseraTensorInfo& in) {
    ModelTensorInfo t;
    t.name = in.name ? in.name : "";
    t.dtype = in.dtype;
    if (in.rank > 0 && in.shape)
        t.shape.assign(in.shape, in.shape + in.rank);
    return t;
}

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#else
constexpr uint16_t kHostMachine = EM_NONE; // unknown: left to dlopen
#endif

/// "x86-64", "aarch64", ... for an ELF e_machine; "ELF machine N" for the others.
std::string machine_name(uint16_t m) {
    switch (m) {
    case EM_X86_64:
        return "x86-64";
    case EM_AARCH64:
        return "aarch64";
    case EM_386:
        return "i386";
    case EM_ARM:
        return "arm";
    case EM_RISCV:
        return "riscv";
    case EM_PPC64:
        return "ppc64";
    case EM_S390:
        return "s390";
    default:
        return "ELF machine " + std::to_string(m);
    }
}

/// Throws UserError when the ELF file at `path` is for another machine (dlopen says "No such
/// file or directory" for it) or ends before the headers and segments it declares (a truncated
/// copy: dlopen would map the missing pages and the first access to them would kill the
/// process with SIGBUS). Files that are not 64-bit ELF are left to dlopen, which refuses them
/// with its own message.
void check_elf_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    Elf64_Ehdr eh{};
    if (!in.read(reinterpret_cast<char*>(&eh), sizeof eh) ||
        std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
        return;
    if (kHostMachine != EM_NONE && eh.e_machine != kHostMachine)
        throw UserError() << "model library '" << path << "' is built for another machine ("
                          << machine_name(eh.e_machine) << "; this is "
                          << machine_name(kHostMachine) << ")";
    const uint64_t size = std::filesystem::file_size(path);
    uint64_t needed = std::max<uint64_t>(eh.e_phoff + uint64_t(eh.e_phnum) * eh.e_phentsize,
                                         eh.e_shoff + uint64_t(eh.e_shnum) * eh.e_shentsize);
    const uint64_t phdrs_end = eh.e_phoff + eh.e_phnum * sizeof(Elf64_Phdr);
    if (eh.e_phentsize == sizeof(Elf64_Phdr) && phdrs_end <= size) {
        in.seekg(static_cast<std::streamoff>(eh.e_phoff));
        for (int i = 0; i < eh.e_phnum; ++i) {
            Elf64_Phdr ph{};
            if (!in.read(reinterpret_cast<char*>(&ph), sizeof ph))
                break;
            needed = std::max<uint64_t>(needed, ph.p_offset + ph.p_filesz);
        }
    }
    if (needed > size)
        throw UserError() << "model library '" << path << "' is truncated or corrupt: " << size
                          << " bytes, its headers and segments need " << needed;
}

} // namespace

ModelLibrary::ModelLibrary(const std::string& path) : path_(path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw UserError() << "model library '" << path << "' does not exist";
    // A name without '/' would be searched for in the library path instead of opened here.
    const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
    check_elf_file(path);
    handle_ = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
        const char* why = dlerror();
        throw UserError() << "cannot load model library '" << path
                          << "': " << (why ? why : "unknown dlopen error");
    }
    try {
        lookup(handle_, path_, "tessera_model_abi_version", api_.abi_version);
        const int abi = api_.abi_version();
        if (abi != TESSERA_MODEL_ABI_VERSION)
            throw UserError() << "model library '" << path << "' has model ABI version " << abi
                              << ", this tessera expects " << TESSERA_MODEL_ABI_VERSION
                              << " (rebuild the model with this tessera)";
        lookup(handle_, path_, "tessera_model_create", api_.create);
        lookup(handle_, path_, "tessera_model_free", api_.free);
        lookup(handle_, path_, "tessera_model_name", api_.name);
        lookup(handle_, path_, "tessera_model_num_inputs", api_.num_inputs);
        lookup(handle_, path_, "tessera_model_num_outputs", api_.num_outputs);
        lookup(handle_, path_, "tessera_model_input_info", api_.input_info);
        lookup(handle_, path_, "tessera_model_output_info", api_.output_info);
        lookup(handle_, path_, "tessera_model_set_num_threads", api_.set_num_threads);
        lookup(handle_, path_, "tessera_model_run", api_.run);
        lookup(handle_, path_, "tessera_model_last_error", api_.last_error);
        lookup(handle_, path_, "tessera_model_arena_bytes", api_.arena_bytes, false);
        lookup(handle_, path_, "tessera_model_set_profiling", api_.set_profiling, false);
        lookup(handle_, path_, "tessera_model_num_calls", api_.num_calls, false);
        lookup(handle_, path_, "tessera_model_call_profile", api_.call_profile, false);
        lookup(handle_, path_, "tessera_model_call_label", api_.call_label, false);
        lookup(handle_, path_, "tessera_model_target", api_.target, false);
        lookup(handle_, path_, "tessera_model_call_work", api_.call_work, false);
    } catch (...) {
        dlclose(handle_);
        throw;
    }
}

ModelLibrary::~ModelLibrary() {
    if (handle_)
        dlclose(handle_);
}

ModelInstance::ModelInstance(const ModelLibrary& lib) : lib_(lib) {
    const ModelLibrary::Api& api = lib_.api();
    if (api.create(&model_) != 0) {
        model_ = nullptr;
        fail_create("cannot create the model");
    }
    const int n_in = api.num_inputs(model_), n_out = api.num_outputs(model_);
    for (int i = 0; i < n_in; ++i) {
        TesseraTensorInfo info{};
        if (api.input_info(model_, i, &info) != 0)
            fail_create("cannot describe input " + std::to_string(i));
        inputs_.push_back(copy_info(info));
    }
    for (int i = 0; i < n_out; ++i) {
        TesseraTensorInfo info{};
        if (api.output_info(model_, i, &info) != 0)
            fail_create("cannot describe output " + std::to_string(i));
        outputs_.push_back(copy_info(info));
    }
}

ModelInstance::~ModelInstance() {
    if (model_)
        lib_.api().free(model_);
}

void ModelInstance::fail_create(const std::string& what) {
    if (model_)
        lib_.api().free(model_);
    throw UserError() << "model '" << lib_.path() << "': " << what << ": "
                      << lib_.api().last_error();
}

std::string ModelInstance::name() const { return lib_.api().name(model_); }

int64_t ModelInstance::arena_bytes() const {
    return lib_.api().arena_bytes ? lib_.api().arena_bytes(model_) : -1;
}

bool ModelInstance::can_profile() const {
    const ModelLibrary::Api& api = lib_.api();
    return api.set_profiling && api.num_calls && api.call_profile;
}

void ModelInstance::set_profiling(int mode) {
    if (!can_profile())
        throw UserError() << "model library '" << lib_.path()
                          << "' cannot profile its calls (built by an older tessera: rebuild it)";
    if (lib_.api().set_profiling(model_, mode) != 0)
        throw UserError() << "model '" << lib_.path()
                          << "': cannot set profiling: " << lib_.api().last_error();
}

std::vector<ModelInstance::CallProfile> ModelInstance::call_profiles() const {
    std::vector<CallProfile> calls;
    if (!can_profile())
        return calls;
    const int n = lib_.api().num_calls(model_);
    for (int i = 0; i < n; ++i) {
        TesseraCallProfile p{};
        if (lib_.api().call_profile(model_, i, &p) != 0)
            throw UserError() << "model '" << lib_.path() << "': cannot read the profile of call "
                              << i << ": " << lib_.api().last_error();
        const char* label = lib_.api().call_label ? lib_.api().call_label(model_, i) : nullptr;
        int64_t flops = 0;
        const char* precision = nullptr;
        if (lib_.api().call_work && lib_.api().call_work(model_, i, &flops, &precision) != 0)
            throw UserError() << "model '" << lib_.path() << "': cannot read the work of call " << i
                              << ": " << lib_.api().last_error();
        calls.push_back({p.kernel ? p.kernel : "", label ? label : "", p.seconds, p.runs, flops,
                         precision ? precision : ""});
    }
    return calls;
}

void ModelInstance::set_num_threads(int n) {
    if (lib_.api().set_num_threads(model_, n) != 0)
        throw UserError() << "model '" << lib_.path() << "': cannot set " << n
                          << " threads: " << lib_.api().last_error();
}

void ModelInstance::run(const void* const* inputs, void* const* outputs) {
    if (lib_.api().run(model_, inputs, outputs) != 0)
        throw UserError() << "model '" << lib_.path()
                          << "' failed to run: " << lib_.api().last_error();
}

} // namespace tessera::cli
