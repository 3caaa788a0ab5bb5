// tessera.load(): a model library loaded through its C API (src/cli/model_library.h, as
// `tessera run` loads one) and runs on numpy arrays, without copying inputs that are already
// dense in the model's dtype.
#include "binding.h"

#include <utility>

#include <nanobind/stl/string.h>

#include "model_library.h"
#include "tessera/support/error.h"
#include "threads_option.h"

namespace tessera::python {

namespace {

/// A Python object's buffer (PEP 3118), released by the destructor; the GIL must be held.
class BufferView {
  public:
    BufferView() = default;
    ~BufferView() {
        if (held_)
            PyBuffer_Release(&view_);
    }
    BufferView(const BufferView&) = delete;
    BufferView& operator=(const BufferView&) = delete;

    /// Takes obj's buffer with `flags`; false (the Python error cleared) when obj refuses.
    bool get(PyObject* obj, int flags) {
        if (held_) {
            PyBuffer_Release(&view_);
            held_ = false;
        }
        if (PyObject_GetBuffer(obj, &view_, flags) != 0) {
            PyErr_Clear();
            return false;
        }
        held_ = true;
        return true;
    }
    const Py_buffer& view() const { return view_; }

  private:
    Py_buffer view_{};
    bool held_ = false;
};

/// "(1, 784)", "(784,)", "()": a shape as Python prints a tuple.
template <typename Dim> std::string shape_text(const Dim* dims, size_t rank) {
    std::string s = "(";
    for (size_t i = 0; i < rank; ++i)
        s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + (rank == 1 ? ",)" : ")");
}

/// str(obj), for messages.
std::string text_of(nb::handle obj) { return nb::str(obj).c_str(); }

/// Whether a buffer holds an array of shape `dims`.
bool has_shape(const Py_buffer& v, const std::vector<int64_t>& dims) {
    if (static_cast<size_t>(v.ndim) != dims.size())
        return false;
    for (size_t i = 0; i < dims.size(); ++i)
        if (v.shape[i] != dims[i])
            return false;
    return true;
}

} // namespace

Model::Model(const std::string& path, nb::callable numpy_dtype) {
    {
        nb::gil_scoped_release release; // loading and creating touch no Python object
        library_ = std::make_unique<cli::ModelLibrary>(path);
        instance_ = std::make_unique<cli::ModelInstance>(*library_);
    }
    name_ = instance_->name();
    const cli::ModelLibrary::Api& api = library_->api();
    target_ = api.target ? api.target() : "cpu";
    nb::module_ np = nb::module_::import_("numpy");
    ndarray_type_ = np.attr("ndarray");
    asarray_ = np.attr("asarray");
    ascontiguousarray_ = np.attr("ascontiguousarray");
    empty_ = np.attr("empty");
    auto tensors = [&](const std::vector<cli::ModelTensorInfo>& infos) {
        std::vector<Tensor> ts;
        for (const cli::ModelTensorInfo& info : infos) {
            nb::list dims;
            for (int64_t d : info.shape)
                dims.append(d);
            ts.push_back({info.name, nb::str(info.name.c_str()), numpy_dtype(info.dtype),
                          nb::tuple(dims), info.shape,
                          shape_text(info.shape.data(), info.shape.size())});
        }
        return ts;
    };
    inputs_ = tensors(instance_->inputs());
    outputs_ = tensors(instance_->outputs());
}

Model::~Model() = default;

const std::string& Model::path() const { return library_->path(); }

nb::list Model::describe(const std::vector<Tensor>& ts) {
    nb::list out;
    for (const Tensor& t : ts)
        out.append(nb::make_tuple(t.key, t.dtype, t.shape));
    return out;
}

void Model::set_num_threads(int n) {
    if (n < 0 || n > cli::kMaxThreads)
        throw UserError() << "set_num_threads: n must be 0.." << cli::kMaxThreads
                          << " (0: one per physical core), got " << n;
    instance_->set_num_threads(n);
}

void Model::fail_unknown_input(nb::handle feeds) const {
    std::string names;
    for (const Tensor& t : inputs_)
        names += (names.empty() ? "" : ", ") + t.name;
    for (auto [key, value] : nb::borrow<nb::dict>(feeds)) {
        bool known = false;
        for (const Tensor& t : inputs_)
            known = known || key.equal(t.key);
        if (!known)
            throw UserError() << "unknown input " << nb::repr(key).c_str()
                              << " (the model's inputs: " << names << ")";
    }
    TESSERA_UNREACHABLE() << "a feeds dict with every input and no other key is refused";
}

nb::dict Model::run(nb::handle feeds) {
    if (!PyDict_Check(feeds.ptr()))
        throw UserError() << "run takes a dict of input name -> array, got "
                          << nb::inst_name(feeds).c_str();
    const size_t n_in = inputs_.size(), n_out = outputs_.size();
    // Arrays made here (conversions, outputs) and the buffers of every array stay alive until
    // the run returns.
    std::vector<nb::object> made(n_in + n_out);
    std::vector<BufferView> views(n_in + n_out);
    std::vector<const void*> in_ptrs(n_in);
    std::vector<void*> out_ptrs(n_out);
    for (size_t i = 0; i < n_in; ++i) {
        const Tensor& t = inputs_[i];
        PyObject* value = PyDict_GetItemWithError(feeds.ptr(), t.key.ptr());
        if (!value) {
            if (PyErr_Occurred())
                throw nb::python_error();
            throw UserError() << "missing input '" << t.name << "' (expected " << text_of(t.dtype)
                              << " " << t.shape_text << ")";
        }
        nb::handle array = value;
        if (!PyObject_TypeCheck(value, reinterpret_cast<PyTypeObject*>(ndarray_type_.ptr()))) {
            // A list, a scalar or another framework's array: numpy makes it one of this dtype.
            try {
                made[i] = asarray_(array, t.dtype);
            } catch (nb::python_error& e) {
                throw UserError() << "input '" << t.name << "': cannot make a " << text_of(t.dtype)
                                  << " array of a " << nb::inst_name(array).c_str() << ": "
                                  << text_of(e.value());
            }
            array = made[i];
        }
        nb::object dtype = nb::steal(PyObject_GetAttr(array.ptr(), dtype_attr_.ptr()));
        if (!dtype.is_valid())
            throw nb::python_error();
        if (!dtype.is(t.dtype) && !dtype.equal(t.dtype))
            throw UserError() << "input '" << t.name << "': expected dtype " << text_of(t.dtype)
                              << ", given " << text_of(dtype);
        BufferView& view = views[i];
        if (!view.get(array.ptr(), PyBUF_STRIDES))
            throw UserError() << "input '" << t.name << "': its " << nb::inst_name(array).c_str()
                              << " does not expose its memory";
        if (!has_shape(view.view(), t.dims))
            throw UserError() << "input '" << t.name << "': expected shape " << t.shape_text
                              << ", given "
                              << shape_text(view.view().shape,
                                            static_cast<size_t>(view.view().ndim));
        if (!PyBuffer_IsContiguous(&view.view(), 'C')) {
            // Strided (a slice, a transpose, Fortran order): the one case that copies.
            made[i] = ascontiguousarray_(array);
            if (!view.get(made[i].ptr(), PyBUF_STRIDES))
                throw nb::python_error();
        }
        in_ptrs[i] = view.view().buf;
    }
    if (PyDict_Size(feeds.ptr()) != static_cast<Py_ssize_t>(n_in))
        fail_unknown_input(feeds);
    nb::dict results;
    for (size_t i = 0; i < n_out; ++i) {
        const Tensor& t = outputs_[i];
        nb::object& array = made[n_in + i];
        array = empty_(t.shape, t.dtype);
        TESSERA_CHECK(views[n_in + i].get(array.ptr(), PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS))
            << "numpy.empty made no writable dense array for output '" << t.name << "'";
        out_ptrs[i] = views[n_in + i].view().buf;
        results[t.key] = array;
    }
    {
        nb::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(run_mutex_);
        instance_->run(in_ptrs.data(), out_ptrs.data());
    }
    return results;
}

} // namespace tessera::python
