// The extension module tessera._tessera: build(), Model and the mapping of tessera's C++ errors
// to the Python exceptions tessera/__init__.py defines.
#include "binding.h"

#include <new>

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "tessera/support/error.h"

namespace tessera::python {

namespace {

/// tessera.UserError and tessera.InternalError once __init__.py has registered them; they live
/// as long as the process (a reference is kept), so no destructor runs after the interpreter.
PyObject* g_user_error = nullptr;
PyObject* g_internal_error = nullptr;

/// Raises `type` (RuntimeError before registration) with `message`.
void raise(PyObject* type, const char* message) {
    PyErr_SetString(type ? type : PyExc_RuntimeError, message);
}

/// tessera::UserError -> tessera.UserError; InternalError, ScheduleError and other C++
/// exceptions -> tessera.InternalError, with the message `tessera` prints (less "error: ").
/// Python's own errors and std::bad_alloc keep nanobind's translation.
void translate(const std::exception_ptr& p, void*) {
    try {
        std::rethrow_exception(p);
    } catch (const UserError& e) {
        raise(g_user_error, e.what());
    } catch (const InternalError& e) {
        raise(g_internal_error, e.what());
    } catch (const std::bad_alloc&) {
        throw;
    } catch (const std::exception& e) {
        raise(g_internal_error, (std::string("internal error: ") + e.what()).c_str());
    }
}

void register_errors(nb::handle user_error, nb::handle internal_error) {
    for (nb::handle h : {user_error, internal_error})
        if (!PyType_Check(h.ptr()) ||
            !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(h.ptr()),
                              reinterpret_cast<PyTypeObject*>(PyExc_Exception)))
            throw nb::type_error("_register_errors takes two Exception subclasses");
    Py_XDECREF(g_user_error);
    Py_XDECREF(g_internal_error);
    g_user_error = user_error.inc_ref().ptr();
    g_internal_error = internal_error.inc_ref().ptr();
}

} // namespace

} // namespace tessera::python

NB_MODULE(_tessera, m) {
    namespace nb = nanobind;
    using namespace nb::literals;
    using tessera::python::BuildRequest;
    using tessera::python::Model;
    m.doc() = "The compiled core of the tessera package (use the tessera module)";
    nb::register_exception_translator(tessera::python::translate);
    m.def("_register_errors", &tessera::python::register_errors, "user_error"_a, "internal_error"_a,
          "Sets the exception classes tessera's errors are raised as");
    m.def(
        "build",
        [](std::string model, std::string output, std::optional<std::string> db, std::string target,
           std::string precision, int opt_level,
           std::map<std::string, std::vector<int64_t>> input_shapes) {
            BuildRequest r{std::move(model),       std::move(output),    std::move(db),
                           std::move(target),      std::move(precision), opt_level,
                           std::move(input_shapes)};
            nb::gil_scoped_release release;
            return tessera::python::build_model(r);
        },
        "model"_a, "output"_a, "db"_a.none(), "target"_a, "precision"_a, "opt_level"_a,
        "input_shapes"_a, "Builds an ONNX model into a shared library (see tessera.build)");
    nb::class_<Model>(m, "Model", "A loaded model library (see tessera.Model)")
        .def(nb::init<const std::string&, nb::callable>(), "path"_a, "numpy_dtype"_a)
        .def_prop_ro("name", &Model::name)
        .def_prop_ro("target", &Model::target)
        .def_prop_ro("path", &Model::path)
        .def_prop_ro("inputs", &Model::inputs)
        .def_prop_ro("outputs", &Model::outputs)
        .def("set_num_threads", &Model::set_num_threads, "n"_a)
        .def("run", &Model::run, "feeds"_a);
}
