// `tessera inspect`: import, optimize, fuse and plan a model, and report each step.
#include "inspect_command.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tessera/compile/model_compiler.h"
#include "tessera/graph/fusion.h"
#include "tessera/graph/memory_plan.h"
#include "tessera/graph/pipeline.h"
#include "tessera/graph/tasks.h"
#include "tessera/schedule/schedule.h"
#include "tessera/support/error.h"
#include "tune_command.h"

namespace tessera::cli {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// "4.59 MiB", "23.0 KiB", "512 B".
std::string human_bytes(int64_t b) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(2);
    if (b >= (int64_t(1) << 20))
        os << static_cast<double>(b) / double(1 << 20) << " MiB";
    else if (b >= 1024)
        os << static_cast<double>(b) / 1024.0 << " KiB";
    else
        os << b << " B";
    return os.str();
}

struct PatternCount {
    std::string pattern;
    std::string signature;
    int count = 0;
};

/// Groups with equal signatures (pattern and output type), most frequent first, then by
/// signature: deterministic.
std::vector<PatternCount> count_groups(const graph::Graph& g,
                                       const std::vector<graph::FusedGroup>& groups) {
    std::map<std::string, PatternCount> by_sig;
    for (const graph::FusedGroup& grp : groups) {
        // A group whose operands are written in place runs nothing.
        const std::string sig =
            graph::group_signature(g, grp) + (grp.operands_in_place ? " (in place)" : "");
        PatternCount& pc = by_sig[sig];
        pc.pattern = grp.pattern;
        pc.signature = sig;
        ++pc.count;
    }
    std::vector<PatternCount> out;
    for (auto& [sig, pc] : by_sig)
        out.push_back(pc);
    std::stable_sort(out.begin(), out.end(), [](const PatternCount& a, const PatternCount& b) {
        return a.count > b.count;
    });
    return out;
}

// The task named by `which`: an index into `tasks`, or a unique prefix of a workload key.
size_t find_task(const std::vector<graph::Task>& tasks, const std::string& which) {
    const bool index =
        std::all_of(which.begin(), which.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (index && which.size() < 10) {
        const size_t i = std::stoul(which);
        if (i < tasks.size())
            return i;
    }
    std::vector<size_t> hits;
    for (size_t i = 0; i < tasks.size(); ++i)
        if (tasks[i].workload_key.rfind(which, 0) == 0)
            hits.push_back(i);
    if (hits.size() == 1)
        return hits[0];
    throw UserError() << "--schedule " << which << ": "
                      << (hits.empty()
                              ? "no task has this index or key prefix (the model has " +
                                    std::to_string(tasks.size()) + " tasks)"
                              : std::to_string(hits.size()) + " tasks' keys start with it");
}

} // namespace

void run_inspect(const InspectOptions& options, std::ostream& out) {
    compile::ModelPipelineOptions mpo;
    mpo.model_path = options.model;
    mpo.import = import_options(options.inputs);
    mpo.opt_level = options.opt_level;
    mpo.precision = precision_of(options.inputs);
    mpo.layout_block = options.layout_block;
    if (options.layout_block < 0)
        throw UserError() << "--nchwc-block " << options.layout_block << " must be positive";
    mpo.print_after = options.print_after;
    mpo.disabled_passes =
        std::set<std::string>(options.disabled_passes.begin(), options.disabled_passes.end());
    mpo.horizontal_fusion = options.horizontal_fusion;
    mpo.target = checked_target(options.target, false, /*may_cross=*/true);
    // Graph printouts go to the report stream, except in JSON mode where stdout must hold only
    // the JSON object.
    mpo.pass_output = options.json ? &std::cerr : &out;
    mpo.keep_task_error = true; // the report shows what worked and names the op that did not
    const compile::ModelPipeline p = compile::run_model_pipeline(mpo);
    const graph::Graph& g = p.graph;
    const std::vector<graph::FusedGroup>& groups = p.groups;
    const std::vector<graph::Task>& tasks = p.tasks;
    const std::string& tasks_error = p.tasks_error;
    const std::vector<graph::PassResult>& log = p.passes;
    const std::map<std::string, int>& ops_before = p.ops_imported;
    const std::map<std::string, int> ops_after = graph::op_histogram(g);
    const int nodes_before = p.nodes_imported;
    const double import_s = p.import_seconds, optimize_s = p.optimize_seconds;
    const double fuse_s = p.fuse_seconds, tasks_s = p.tasks_seconds;

    const auto t0 = Clock::now();
    const graph::MemoryPlan plan = graph::plan_memory(g, groups);
    const double plan_s = since(t0);
    const std::vector<PatternCount> counts = count_groups(g, groups);

    if (!options.schedule_task.empty()) {
        if (!tasks_error.empty())
            throw UserError() << tasks_error;
        const size_t i = find_task(tasks, options.schedule_task);
        const graph::Task& t = tasks[i];
        const sched::State s = sched::default_schedule(
            t.compute.compute, tune::default_schedule_options_for(mpo.target));
        out << "task " << i << " " << t.workload_key.substr(0, 12) << " " << t.pattern
            << ": default schedule on this host (" << s.steps.size() << " steps)\n"
            << sched::to_string(s) << sched::steps_to_json(s.steps) << "\n";
        return;
    }

    if (options.json) {
        nlohmann::ordered_json j;
        j["model"] = options.model;
        j["graph"] = g.name;
        j["opt_level"] = options.opt_level;
        j["nodes_before"] = nodes_before;
        j["nodes_after"] = static_cast<int>(g.num_nodes());
        j["ops_before"] = ops_before;
        j["ops_after"] = ops_after;
        nlohmann::ordered_json passes = nlohmann::ordered_json::array();
        for (const graph::PassResult& r : log) {
            nlohmann::ordered_json p;
            p["pass"] = r.pass;
            p["changes"] = r.changes;
            p["nodes_before"] = r.nodes_before;
            p["nodes_after"] = r.nodes_after;
            p["summary"] = r.summary;
            if (options.time_passes)
                p["seconds"] = r.seconds;
            passes.push_back(p);
        }
        j["passes"] = passes;
        nlohmann::ordered_json fused;
        fused["count"] = groups.size();
        nlohmann::ordered_json pats = nlohmann::ordered_json::array();
        for (const PatternCount& pc : counts)
            pats.push_back(
                {{"pattern", pc.pattern}, {"signature", pc.signature}, {"count", pc.count}});
        fused["patterns"] = pats;
        j["fused_groups"] = fused;
        nlohmann::ordered_json tj;
        if (!tasks_error.empty()) {
            tj["error"] = tasks_error;
        } else {
            tj["unique"] = tasks.size();
            nlohmann::ordered_json list = nlohmann::ordered_json::array();
            for (const graph::Task& t : tasks)
                list.push_back({{"workload_key", t.workload_key},
                                {"pattern", t.pattern},
                                {"flops", t.flops},
                                {"count", t.count()},
                                {"groups", t.groups}});
            tj["list"] = list;
        }
        j["tasks"] = tj;
        j["memory"] = {{"intermediates", plan.assignments.size()},
                       {"buffers", plan.buffer_bytes.size()},
                       {"planned_bytes", plan.planned_bytes},
                       {"naive_bytes", plan.naive_bytes},
                       {"live_lower_bound_bytes", plan.live_lower_bound},
                       {"in_place", plan.in_place_count}};
        if (options.time_passes)
            j["seconds"] = {{"import", import_s},
                            {"optimize", optimize_s},
                            {"fuse", fuse_s},
                            {"tasks", tasks_s},
                            {"memory_plan", plan_s}};
        out << j.dump() << "\n";
        return;
    }

    out << "model " << options.model << " (graph '" << g.name << "', opset " << g.opset << ")\n";
    out << "\npipeline -O" << options.opt_level << ": " << nodes_before << " -> " << g.num_nodes()
        << " nodes\n";
    {
        std::ostringstream os;
        graph::print_pass_log(os, log, options.time_passes);
        std::istringstream lines(os.str());
        for (std::string line; std::getline(lines, line);)
            out << "  " << line << "\n";
    }

    out << "\nnodes per op (before -> after)\n";
    std::set<std::string> names;
    for (const auto& [n, c] : ops_before)
        names.insert(n);
    for (const auto& [n, c] : ops_after)
        names.insert(n);
    size_t width = 4;
    for (const std::string& n : names)
        width = std::max(width, n.size());
    for (const std::string& n : names) {
        auto b = ops_before.find(n);
        auto a = ops_after.find(n);
        out << "  " << std::left << std::setw(static_cast<int>(width)) << n << std::right
            << std::setw(6) << (b == ops_before.end() ? 0 : b->second) << " -> " << std::setw(4)
            << (a == ops_after.end() ? 0 : a->second) << "\n";
    }

    out << "\nfused groups: " << groups.size() << " (" << counts.size()
        << " distinct by pattern and output type)\n";
    for (const PatternCount& pc : counts)
        out << "  " << std::setw(4) << pc.count << " x " << pc.signature << "\n";

    if (!tasks_error.empty()) {
        out << "\ntasks: not available: " << tasks_error << "\n";
    } else {
        int64_t total_flops = 0;
        for (const graph::Task& t : tasks)
            total_flops += t.flops * t.count();
        out << "\ntasks: " << tasks.size() << " unique (" << groups.size() << " groups, "
            << std::fixed << std::setprecision(3) << static_cast<double>(total_flops) * 1e-9
            << " GFLOP per run)\n";
        out << "  key           count      MFLOP  pattern\n";
        for (const graph::Task& t : tasks)
            out << "  " << t.workload_key.substr(0, 12) << "  " << std::setw(5) << t.count()
                << "  " << std::setw(9) << std::setprecision(3)
                << static_cast<double>(t.flops) * 1e-6 << "  " << t.pattern << " "
                << graph::dtype_name(g.value(t.compute.outputs[0]).dtype)
                << graph::shape_str(g.value(t.compute.outputs[0]).shape) << "\n";
    }

    int views = 0;
    for (const graph::BufferAssignment& a : plan.assignments)
        views += a.view_of >= 0;
    out << "\nmemory plan: " << plan.assignments.size() << " intermediates in "
        << plan.buffer_bytes.size() << " buffers (" << plan.in_place_count << " in place, " << views
        << " inside an in-place group's output)\n";
    out << "  planned " << human_bytes(plan.planned_bytes) << " vs naive "
        << human_bytes(plan.naive_bytes);
    if (plan.naive_bytes > 0)
        out << " (" << std::fixed << std::setprecision(1)
            << 100.0 * static_cast<double>(plan.planned_bytes) /
                   static_cast<double>(plan.naive_bytes)
            << "%)";
    out << "; live lower bound " << human_bytes(plan.live_lower_bound) << "\n";
    if (options.time_passes) {
        out << std::fixed << std::setprecision(3) << "\ntime: import " << import_s * 1e3
            << " ms, optimize " << optimize_s * 1e3 << " ms, fuse " << fuse_s * 1e3
            << " ms, tasks " << tasks_s * 1e3 << " ms, memory plan " << plan_s * 1e3 << " ms\n";
    }
}

} // namespace tessera::cli
