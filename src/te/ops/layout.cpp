// Data movement: transpose, reshape, concat, pad and slice.
#include "op_util.h"

#include <algorithm>

namespace tessera::te {

using namespace detail;

Tensor transpose(const Tensor& x, std::vector<int64_t> perm) {
    const std::string op = "transpose";
    check_defined(x, op, "input");
    size_t rank = x.ndim();
    if (perm.empty())
        for (size_t d = rank; d-- > 0;)
            perm.push_back(static_cast<int64_t>(d));
    if (perm.size() != rank)
        throw UserError() << op << ": permutation of " << perm.size() << " axes for input '"
                          << x.name() << "' of rank " << rank;
    std::vector<bool> used(rank, false);
    for (auto& p : perm) {
        p = normalize_axis(p, rank, op);
        if (used[static_cast<size_t>(p)])
            throw UserError() << op << ": axis " << p << " repeated in permutation";
        used[static_cast<size_t>(p)] = true;
    }
    std::vector<int64_t> shape(rank);
    for (size_t d = 0; d < rank; ++d)
        shape[d] = x.shape()[static_cast<size_t>(perm[d])];
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> idx(rank);
            for (size_t d = 0; d < rank; ++d)
                idx[static_cast<size_t>(perm[d])] = i[d];
            return x(idx);
        },
        op);
}

Tensor reshape(const Tensor& x, std::vector<int64_t> shape) {
    const std::string op = "reshape";
    check_defined(x, op, "input");
    int64_t total = num_elements(x.shape()), known = 1;
    int infer = -1;
    for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == -1) {
            if (infer >= 0)
                throw UserError() << op << ": more than one -1 in " << shape_to_string(shape);
            infer = static_cast<int>(d);
        } else if (shape[d] <= 0) {
            throw UserError() << op << ": target shape " << shape_to_string(shape)
                              << " has a non-positive dim " << shape[d];
        } else {
            known *= shape[d];
        }
    }
    if (infer >= 0) {
        if (total % known != 0)
            throw UserError() << op << ": cannot infer the -1 of " << shape_to_string(shape)
                              << " for " << total << " elements";
        shape[static_cast<size_t>(infer)] = total / known;
    }
    if (num_elements(shape) != total)
        throw UserError() << op << ": cannot reshape " << shape_to_string(x.shape()) << " ("
                          << total << " elements) to " << shape_to_string(shape) << " ("
                          << num_elements(shape) << " elements)";
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            // Flat row-major position in the output, then unflattened into the input's dims.
            Expr flat;
            for (size_t d = 0; d < shape.size(); ++d)
                flat = flat.defined() ? flat * Expr(shape[d]) + i[d] : Expr(i[d]);
            if (!flat.defined())
                flat = Expr(0);
            const auto& xs = x.shape();
            std::vector<Expr> idx(xs.size());
            int64_t stride = 1;
            for (size_t d = xs.size(); d-- > 0;) {
                Expr q = stride == 1 ? flat : flat / Expr(stride);
                idx[d] = d == 0 ? q : q % Expr(xs[d]);
                stride *= xs[d];
            }
            return x(idx);
        },
        op);
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
    const std::string op = "concat";
    if (xs.empty())
        throw UserError() << op << ": no inputs";
    for (const Tensor& t : xs)
        check_defined(t, op, "input");
    const Tensor& first = xs[0];
    size_t rank = first.ndim();
    if (rank == 0)
        throw UserError() << op << ": inputs must have rank >= 1";
    size_t ax = static_cast<size_t>(normalize_axis(axis, rank, op));
    std::vector<int64_t> shape = first.shape();
    shape[ax] = 0;
    std::vector<int64_t> offsets;
    for (const Tensor& t : xs) {
        check_same_dtype(first, t, op);
        bool ok = t.ndim() == rank;
        for (size_t d = 0; ok && d < rank; ++d)
            ok = d == ax || t.shape()[d] == first.shape()[d];
        if (!ok)
            throw UserError() << op << ": input '" << t.name() << "' " << shape_to_string(t.shape())
                              << " does not match " << shape_to_string(first.shape())
                              << " outside axis " << ax;
        offsets.push_back(shape[ax]);
        shape[ax] += t.shape()[ax];
    }
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            // A chain of Selects from the last input back; each read is clamped into its input
            // because Select evaluates both sides.
            Expr result;
            for (size_t k = xs.size(); k-- > 0;) {
                std::vector<Expr> idx(i.begin(), i.end());
                int64_t len = xs[k].shape()[ax];
                Expr local = Expr(i[ax]) - Expr(offsets[k]);
                idx[ax] = clamp_index(local, 0, len - 1);
                Expr read = xs[k](idx);
                result = result.defined()
                             ? ir::select(Expr(i[ax]) < Expr(offsets[k] + len), read, result)
                             : read;
            }
            return result;
        },
        op);
}

namespace detail {
Tensor pad_named(const Tensor& x, std::vector<int64_t> before, std::vector<int64_t> after,
                 Expr value, PadMode mode, const std::string& name) {
    const std::string op = "pad";
    check_defined(x, op, "input");
    size_t rank = x.ndim();
    if (before.size() != rank || after.size() != rank)
        throw UserError() << op << ": " << before.size() << " and " << after.size()
                          << " pads for input '" << x.name() << "' of rank " << rank;
    std::vector<int64_t> shape(rank);
    for (size_t d = 0; d < rank; ++d) {
        int64_t dim = x.shape()[d];
        shape[d] = dim + before[d] + after[d];
        if (shape[d] <= 0)
            throw UserError() << op << ": pads " << before[d] << "," << after[d] << " leave dim "
                              << d << " of size " << dim << " empty";
        if (mode == PadMode::Reflect && (before[d] >= dim || after[d] >= dim))
            throw UserError() << op << ": reflect pads " << before[d] << "," << after[d]
                              << " must be smaller than dim " << d << " of size " << dim;
    }
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> idx(rank);
            Expr inside;
            for (size_t d = 0; d < rank; ++d) {
                int64_t dim = x.shape()[d];
                Expr src = before[d] == 0 ? Expr(i[d]) : Expr(i[d]) - Expr(before[d]);
                if (before[d] <= 0 && after[d] <= 0) { // only cropped: always in bounds
                    idx[d] = src;
                    continue;
                }
                switch (mode) {
                case PadMode::Constant: {
                    Expr ok = ir::logical_and(src >= Expr(0), src < Expr(dim));
                    inside = inside.defined() ? ir::logical_and(inside, ok) : ok;
                    idx[d] = clamp_index(src, 0, dim - 1);
                    break;
                }
                case PadMode::Edge:
                    idx[d] = clamp_index(src, 0, dim - 1);
                    break;
                case PadMode::Reflect: {
                    Expr m = ir::select(src < Expr(0), Expr(0) - src, src);
                    idx[d] = ir::select(m >= Expr(dim), Expr(2 * (dim - 1)) - m, m);
                    break;
                }
                }
            }
            Expr read = x(idx);
            if (mode != PadMode::Constant || !inside.defined())
                return read;
            return ir::select(inside, read, value);
        },
        name);
}
} // namespace detail

Tensor pad(const Tensor& x, std::vector<int64_t> before, std::vector<int64_t> after, double value,
           PadMode mode) {
    check_defined(x, "pad", "input");
    return pad_named(x, std::move(before), std::move(after), constant(x.dtype(), value), mode,
                     "pad");
}

Tensor pad(const Tensor& x, std::vector<int64_t> before, std::vector<int64_t> after,
           Expr value) {
    check_defined(x, "pad", "input");
    if (value.type() != x.dtype())
        throw UserError() << "pad: value of type " << value.type() << " for input of type "
                          << x.dtype();
    return pad_named(x, std::move(before), std::move(after), value, PadMode::Constant, "pad");
}

Tensor slice(const Tensor& x, std::vector<int64_t> starts, std::vector<int64_t> ends,
             std::vector<int64_t> axes, std::vector<int64_t> steps) {
    const std::string op = "slice";
    check_defined(x, op, "input");
    size_t rank = x.ndim();
    if (axes.empty())
        for (size_t d = 0; d < starts.size(); ++d)
            axes.push_back(static_cast<int64_t>(d));
    if (steps.empty())
        steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size())
        throw UserError() << op << ": starts, ends, axes and steps differ in length ("
                          << starts.size() << ", " << ends.size() << ", " << axes.size() << ", "
                          << steps.size() << ")";
    std::vector<int64_t> begin(rank, 0), step(rank, 1), shape = x.shape();
    std::vector<bool> seen(rank, false);
    for (size_t j = 0; j < starts.size(); ++j) {
        size_t a = static_cast<size_t>(normalize_axis(axes[j], rank, op));
        if (seen[a])
            throw UserError() << op << ": axis " << a << " repeated";
        seen[a] = true;
        int64_t dim = x.shape()[a], s = steps[j];
        if (s == 0)
            throw UserError() << op << ": step of axis " << a << " is 0";
        int64_t b = starts[j] < 0 ? starts[j] + dim : starts[j];
        int64_t e = ends[j] < 0 ? ends[j] + dim : ends[j];
        // ONNX clamping: [0, dim] going forward, [-1, dim - 1] going backward.
        if (s > 0) {
            b = std::clamp<int64_t>(b, 0, dim);
            e = std::clamp<int64_t>(e, 0, dim);
        } else {
            b = std::clamp<int64_t>(b, -1, dim - 1);
            e = std::clamp<int64_t>(e, -1, dim - 1);
        }
        int64_t len = s > 0 ? (e - b + s - 1) / s : (b - e + (-s) - 1) / (-s);
        if (len <= 0)
            throw UserError() << op << ": axis " << a << " (size " << dim << ") sliced "
                              << starts[j] << ":" << ends[j] << ":" << s << " is empty";
        begin[a] = b;
        step[a] = s;
        shape[a] = len;
    }
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> idx(rank);
            for (size_t d = 0; d < rank; ++d) {
                Expr e = i[d];
                if (step[d] != 1)
                    e = e * Expr(step[d]);
                if (begin[d] != 0)
                    e = e + Expr(begin[d]);
                idx[d] = e;
            }
            return x(idx);
        },
        op);
}

} // namespace tessera::te
