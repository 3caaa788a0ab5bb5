// The extension module tessera._tessera: build(), tune(), Model and the mapping of tessera's C++
// errors to the Python exceptions tessera/__init__.py defines.
#include "binding.h"

#include <new>

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "tessera/support/error.h"
#include "tessera/tuner/lookup.h"

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

nb::list coverage_list(const std::vector<compile::TaskCoverage>& rows) {
    nb::list list;
    for (const compile::TaskCoverage& r : rows) {
        nb::dict d;
        d["task"] = r.task;
        d["pattern"] = r.pattern;
        d["workload_key"] = r.workload_key;
        d["count"] = r.count;
        d["source"] = tune::to_string(r.source);
        d["record_id"] = r.record_id;
        d["note"] = r.note;
        list.append(d);
    }
    return list;
}

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
           std::map<std::string, std::vector<int64_t>> input_shapes, std::string runtime_archive) {
            BuildRequest r{std::move(model),        std::move(output),         std::move(db),
                           std::move(target),       std::move(precision),      opt_level,
                           std::move(input_shapes), std::move(runtime_archive)};
            tessera::python::BuildResult built;
            {
                nb::gil_scoped_release release;
                built = tessera::python::build_model(r);
            }
            return nb::make_tuple(built.output, tessera::python::coverage_list(built.coverage));
        },
        "model"_a, "output"_a, "db"_a.none(), "target"_a, "precision"_a, "opt_level"_a,
        "input_shapes"_a, "runtime_archive"_a,
        "Builds an ONNX model into a shared library (see tessera.build): (path, coverage rows)");
    m.def(
        "tune",
        [](std::string model, std::string db, std::string target, std::string precision,
           int opt_level, uint64_t seed, std::optional<int> trials,
           std::optional<double> time_budget,
           std::map<std::string, std::vector<int64_t>> input_shapes, std::string worker,
           nb::object report) {
            tessera::python::TuneRequest r;
            r.model = std::move(model);
            r.db = std::move(db);
            r.target = std::move(target);
            r.precision = std::move(precision);
            r.opt_level = opt_level;
            r.seed = seed;
            r.trials = trials;
            r.time_budget = time_budget;
            r.input_shapes = std::move(input_shapes);
            r.worker = std::move(worker);
            return tessera::python::tune_model(r, report);
        },
        "model"_a, "db"_a, "target"_a, "precision"_a, "opt_level"_a, "seed"_a, "trials"_a.none(),
        "time_budget"_a.none(), "input_shapes"_a, "worker"_a, "report"_a.none(),
        "Tunes an ONNX model's tasks into a tuning database (see tessera.tune)");
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
