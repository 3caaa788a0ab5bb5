// The versioned JSON form of a step list.
#include <nlohmann/json.hpp>

#include "internal/step_fields.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"

namespace tessera::sched {

using Json = nlohmann::ordered_json;

std::string steps_to_json(const std::vector<Step>& steps) {
    Json list = Json::array();
    for (const Step& s : steps) {
        const unsigned f = step_fields(s.kind);
        Json j;
        j["kind"] = to_string(s.kind);
        if (f & kFieldStage)
            j["stage"] = s.stage;
        if (f & kFieldIter)
            j["iter"] = s.iter;
        if (f & kFieldIters)
            j["iters"] = s.iters;
        if (f & kFieldLengths)
            j["lengths"] = s.lengths;
        if (f & kFieldInnerToOuter)
            j["inner_to_outer"] = s.inner_to_outer;
        if (f & kFieldAnnotation)
            j["annotation"] = to_string(s.annotation);
        if (f & kFieldPragma)
            j["pragma"] = s.pragma;
        if (f & kFieldValue)
            j["value"] = s.value;
        if (f & kFieldSrcStep)
            j["src_step"] = s.src_step;
        if (f & kFieldNSplit)
            j["n_split"] = s.n_split;
        if (f & kFieldTargetStage)
            j["target_stage"] = s.target_stage;
        if (f & kFieldTargetIter)
            j["target_iter"] = s.target_iter;
        if (f & kFieldScope)
            j["scope"] = s.scope;
        if (f & kFieldReaders)
            j["readers"] = s.readers;
        list.push_back(std::move(j));
    }
    Json doc;
    doc["version"] = kStepsJsonVersion;
    doc["steps"] = std::move(list);
    return doc.dump();
}

namespace {
/// Reads field `name` of step `index` as T, with a UserError naming what is wrong.
template <typename T> T get_field(const Json& j, const char* name, size_t index) {
    auto it = j.find(name);
    if (it == j.end())
        throw UserError() << "schedule json: step " << index << " has no field '" << name << "'";
    try {
        return it->template get<T>();
    } catch (const nlohmann::json::exception&) {
        throw UserError() << "schedule json: field '" << name << "' of step " << index
                          << " has the wrong type: " << it->dump();
    }
}

/// Integer fields must be JSON integers that fit the C++ type (no floats, no strings).
template <typename T> T get_int(const Json& j, const char* name, size_t index) {
    auto it = j.find(name);
    if (it != j.end() && !it->is_number_integer())
        throw UserError() << "schedule json: field '" << name << "' of step " << index
                          << " is not an integer: " << it->dump();
    return get_field<T>(j, name, index);
}

template <typename T> std::vector<T> get_int_list(const Json& j, const char* name, size_t index) {
    auto it = j.find(name);
    if (it != j.end()) {
        if (!it->is_array())
            throw UserError() << "schedule json: field '" << name << "' of step " << index
                              << " is not a list: " << it->dump();
        for (const Json& e : *it)
            if (!e.is_number_integer())
                throw UserError() << "schedule json: field '" << name << "' of step " << index
                                  << " holds a non-integer: " << e.dump();
    }
    return get_field<std::vector<T>>(j, name, index);
}
} // namespace

std::vector<Step> steps_from_json(const std::string& text) {
    Json doc;
    try {
        doc = Json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw UserError() << "schedule json is not valid json: " << e.what();
    }
    if (!doc.is_object())
        throw UserError() << "schedule json is not an object";
    auto ver = doc.find("version");
    if (ver == doc.end())
        throw UserError() << "schedule json has no 'version'";
    if (!ver->is_number_integer() || ver->get<int64_t>() != kStepsJsonVersion)
        throw UserError() << "schedule json version " << ver->dump()
                          << " is not supported (expected " << kStepsJsonVersion << ")";
    auto list = doc.find("steps");
    if (list == doc.end() || !list->is_array())
        throw UserError() << "schedule json has no 'steps' list";
    std::vector<Step> steps;
    for (size_t i = 0; i < list->size(); ++i) {
        const Json& j = (*list)[i];
        if (!j.is_object())
            throw UserError() << "schedule json: step " << i << " is not an object";
        Step s;
        s.kind = parse_step_kind(get_field<std::string>(j, "kind", i));
        const unsigned f = step_fields(s.kind);
        if (f & kFieldStage)
            s.stage = get_int<int>(j, "stage", i);
        if (f & kFieldIter)
            s.iter = get_int<int>(j, "iter", i);
        if (f & kFieldIters)
            s.iters = get_int_list<int>(j, "iters", i);
        if (f & kFieldLengths)
            s.lengths = get_int_list<int64_t>(j, "lengths", i);
        if (f & kFieldInnerToOuter)
            s.inner_to_outer = get_field<bool>(j, "inner_to_outer", i);
        if (f & kFieldAnnotation)
            s.annotation = parse_iter_annotation(get_field<std::string>(j, "annotation", i));
        if (f & kFieldPragma)
            s.pragma = get_field<std::string>(j, "pragma", i);
        if (f & kFieldValue)
            s.value = get_int<int64_t>(j, "value", i);
        if (f & kFieldSrcStep)
            s.src_step = get_int<int>(j, "src_step", i);
        if (f & kFieldNSplit)
            s.n_split = get_int<int>(j, "n_split", i);
        if (f & kFieldTargetStage)
            s.target_stage = get_int<int>(j, "target_stage", i);
        if (f & kFieldTargetIter)
            s.target_iter = get_int<int>(j, "target_iter", i);
        if (f & kFieldScope)
            s.scope = get_field<std::string>(j, "scope", i);
        if (f & kFieldReaders)
            s.readers = get_int_list<int>(j, "readers", i);
        steps.push_back(std::move(s));
    }
    return steps;
}

} // namespace tessera::sched
