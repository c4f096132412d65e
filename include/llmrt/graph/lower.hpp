// The lowering: one backend-independent pass that turns a graph's execution order into steps
// (graph/step.hpp says what each kind of step computes, and what fusion changes about memory).
// List scheduling over the order: a node's step is emitted as soon as everything it reads from
// outside itself is computed; then the links between steps (roundings, stacks, carried steps)
// and the index checks.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "llmrt/graph/graph.hpp"
#include "llmrt/graph/step.hpp"

namespace llmrt::graph {

// The result of the product at s.nodes[i] (a mul_mat of a matvec step, a mul_mat_id of an
// experts step): the add or add_id of its bias right after it, where the step adds one, else
// the product itself.
inline int32_t product_result(const std::vector<node>& nodes, const step& s, std::size_t i) {
    if (i + 1 >= s.nodes.size()) return s.nodes[i];
    const node& next = nodes[std::size_t(s.nodes[i + 1])];
    return (next.op == op::add || next.op == op::add_id) && next.src[0] == s.nodes[i] ? s.nodes[i + 1] : s.nodes[i];
}
inline int32_t product_result(const graph& g, const step& s, std::size_t i) { return product_result(g.nodes(), s, i); }

namespace detail {

// What the pass needs to know about who reads what.
struct readers_of {
    std::vector<std::vector<int32_t>> of;  // per node: planned nodes that read it (once each)
    std::vector<uint8_t> output;

    readers_of(const graph& g, const std::vector<int32_t>& order) : of(g.size()), output(g.size(), 0) {
        for (int32_t id : order) {
            const node& nd = g.nodes()[std::size_t(id)];
            for (int i = 0; i < nd.n_src(); ++i) {
                auto& r = of[std::size_t(nd.src[std::size_t(i)])];
                if (std::find(r.begin(), r.end(), id) == r.end()) r.push_back(id);
            }
        }
        for (tensor t : g.outputs()) output[std::size_t(t.id)] = 1;
    }
    const std::vector<int32_t>& operator[](int32_t id) const { return of[std::size_t(id)]; }
    bool only_read_by(int32_t id, int32_t reader) const {
        return !output[std::size_t(id)] && of[std::size_t(id)].size() == 1 && of[std::size_t(id)][0] == reader;
    }
};

class lowering {
public:
    lowering(const graph& g, const std::vector<int32_t>& order, const lower_options& o)
        : nodes_(g.nodes()), order_(order), o_(o), readers_(g, order) {
        out_.step_of.assign(g.size(), -1);
        out_.internal.assign(g.size(), 0);
        emitted_.assign(g.size(), 0);
        for (int32_t id : order)
            if (leaf(id)) emitted_[std::size_t(id)] = 1;
    }

    lowered run() {
        // List scheduling over the order: a node's step is emitted as soon as everything the step
        // reads from outside itself has been computed; the order is topological, so every pass
        // emits at least the first node still pending.
        std::vector<int32_t> pending;
        for (int32_t id : order_)
            if (!leaf(id)) pending.push_back(id);
        while (!pending.empty()) {
            std::vector<int32_t> later;
            for (int32_t id : pending) {
                if (emitted_[std::size_t(id)]) continue;
                step s = step_for(id);
                if (ready(s)) emit(std::move(s));
                else later.push_back(id);
            }
            check(later.size() < pending.size(), errc::invalid_argument, "graph lowering: no step can run (a cycle?)");
            pending = std::move(later);
        }
        link_rounding();
        link_epilogues();
        collect_checks();
        return std::move(out_);
    }

private:
    const node& nd(int32_t id) const { return nodes_[std::size_t(id)]; }
    bool leaf(int32_t id) const {
        const op o = nd(id).op;
        return o == op::input || o == op::weight || o == op::state;
    }
    bool quantized_mul_mat(int32_t id) const {
        return nd(id).op == op::mul_mat && !is_float_matrix_type(nd(nd(id).src[0]).type);
    }
    // A mul_mat_id an experts step takes: quantized experts whose k is whole Q8_1 blocks (so that
    // the blocks of a token's slots are the blocks of its column).
    bool expert_mul_mat(int32_t id) const {
        const node& w = nd(nd(id).src[0]);
        return o_.experts && nd(id).op == op::mul_mat_id && !is_float_matrix_type(w.type) && w.ne0 % 32 == 0;
    }
    // The top_k of softmax `id` when only it and expert_weights of the same values and picks read
    // them (-1: none).
    int32_t top_k_of_softmax(int32_t id) const {
        int32_t t = -1;
        for (int32_t r : readers_[id])
            if (nd(r).op == op::top_k && nd(r).src[0] == id) t = r;
        if (t < 0) return -1;
        for (int32_t r : readers_[id])
            if (r != t && !(nd(r).op == op::expert_weights && nd(r).src[0] == id && nd(r).src[1] == t)) return -1;
        return t;
    }
    // A router's float mul_mat `id` and what joins it in its top_k's op step: the softmax, or the
    // add of its bias (a one-column f32 weight), that alone reads its logits, when that result and
    // its top_k form a step (top_k_of_softmax: only the top_k and the expert_weights of its picks
    // read the result). Empty: none.
    std::vector<int32_t> router_step_nodes(int32_t id) const {
        const node& n = nd(id);
        if (n.op != op::mul_mat || nd(n.src[0]).op != op::weight || !is_float_matrix_type(nd(n.src[0]).type) ||
            readers_.output[std::size_t(id)] || readers_[id].size() != 1)
            return {};
        const int32_t r = readers_[id][0];
        const node& a = nd(r);
        const bool joins = (a.op == op::softmax && a.src[0] == id) ||
                           (a.op == op::add && a.src[0] == id && a.src[1] >= 0 && one_column_bias(a.src[1], n.ne0));
        const int32_t t = joins ? top_k_of_softmax(r) : -1;
        return t >= 0 ? std::vector<int32_t>{id, r, t} : std::vector<int32_t>{};
    }
    // The node that adds a bias to product `id`'s result, when it is the result's only reader
    // (-1: none): for a mul_mat an add of a one-column f32 weight as long as the product, for a
    // mul_mat_id an add_id of a weight with the same ids.
    int32_t bias_after(int32_t id) const {
        if (readers_.output[std::size_t(id)] || readers_[id].size() != 1) return -1;
        const int32_t r = readers_[id][0];
        const node& a = nd(r);
        // The op is checked first: a unary reader has no src[1] (-1) to look at.
        const op want = nd(id).op == op::mul_mat_id ? op::add_id : op::add;
        if (a.op != want || a.src[0] != id || a.src[1] < 0 || a.src[1] == id) return -1;
        const node& b = nd(a.src[1]);
        if (want == op::add_id) return a.src[2] == nd(id).src[2] && b.op == op::weight ? r : -1;
        return one_column_bias(a.src[1], nd(id).ne0) ? r : -1;
    }
    // Whether node b is a bias an add puts after a product of `len` rows: one column of len f32s, a weight.
    bool one_column_bias(int32_t b, int64_t len) const {
        const node& w = nd(b);
        return w.op == op::weight && w.type == qtype::f32 && w.ne1 == 1 && !w.batched && w.ne0 == len;
    }

    // Whether every node the step reads from outside itself has been computed.
    bool ready(const step& s) const {
        for (int32_t id : s.nodes) {
            const node& n = nd(id);
            for (int i = 0; i < n.n_src(); ++i) {
                const int32_t src = n.src[std::size_t(i)];
                if (!emitted_[std::size_t(src)] && std::find(s.nodes.begin(), s.nodes.end(), src) == s.nodes.end())
                    return false;
            }
        }
        return true;
    }

    // Records the step, and which of its results are never written (step_for only proposes).
    void emit(step s) {
        const auto index = int32_t(out_.steps.size());
        for (int32_t id : s.nodes) {
            emitted_[std::size_t(id)] = 1;
            out_.step_of[std::size_t(id)] = index;
        }
        if (s.kind == step_kind::norm && s.product >= 0) out_.internal[std::size_t(s.node)] = 1;
        if (s.kind == step_kind::rope_cache) {
            out_.internal[std::size_t(s.k_rope)] = 1;
            for (int32_t norm : {s.q_norm, s.k_norm})
                if (norm >= 0) {  // the norm and its product: read by the rope alone
                    out_.internal[std::size_t(norm)] = 1;
                    out_.internal[std::size_t(readers_[norm][0])] = 1;
                }
        }
        if (s.kind == step_kind::experts || s.kind == step_kind::matvec)  // a product whose bias the step adds
            for (int32_t id : s.nodes)                                        // is never written
                if (nd(id).op == op::add_id || nd(id).op == op::add) out_.internal[std::size_t(nd(id).src[0])] = 1;
        if (s.rounds >= 0 && !readers_.output[std::size_t(s.rounds)] && only_rounding_readers(s.rounds))
            out_.internal[std::size_t(s.rounds)] = 1;
        out_.steps.push_back(std::move(s));
    }

    static step single(step_kind k, int32_t id) {
        step s;
        s.kind = k;
        s.node = id;
        s.nodes = {id};
        return s;
    }

    step step_for(int32_t id) {
        const node& n = nd(id);
        if (o_.rope_cache && o_.rope_norms && n.op == op::rms_norm && n.group > 0) {
            const int32_t rope = rope_after_head_norm(id);
            if (rope >= 0) {
                step s = rope_cache_step(rope);
                if (s.kind == step_kind::rope_cache && (s.q_norm == id || s.k_norm == id)) return s;
            }
        }
        if (o_.norms) {
            if (n.op == op::add) {
                // The residual add and the norm that reads it, when the norm reads nothing else.
                for (int32_t r : readers_[id])
                    if (nd(r).op == op::rms_norm && nd(r).group == 0 && !emitted_[std::size_t(r)] &&
                        same_shape(nd(r), n) && same_shape(nd(n.src[1]), n))
                        return norm_step(r, id);
            }
            // A grouped norm (per-head q/k norms) is a norm step where the backend takes them (its
            // product's weight one group long), else an op step, as its product is.
            if (n.op == op::rms_norm && (n.group == 0 || o_.grouped_norms)) return norm_step(id, -1);
        }
        if (o_.experts && o_.carry_expert_weights && (n.op == op::softmax || n.op == op::mul_mat)) {
            // The router's probabilities and their top k: one op step, top_k its node; led by the
            // router's float mul_mat (and the add of its bias) where they alone feed them.
            const int32_t t = n.op == op::softmax ? top_k_of_softmax(id) : -1;
            std::vector<int32_t> nodes = t >= 0 ? std::vector<int32_t>{id, t} : router_step_nodes(id);
            if (!nodes.empty()) {
                step s = single(step_kind::op, nodes.back());
                s.nodes = std::move(nodes);
                return s;
            }
        }
        if (o_.matvec_groups && quantized_mul_mat(id)) return matvec_step(id);
        if (expert_mul_mat(id)) return experts_step(id);
        if (o_.rope_cache && (n.op == op::rope || n.op == op::set_rows)) {
            step s = rope_cache_step(id);
            if (s.kind == step_kind::rope_cache) return s;
        }
        if (o_.fused_ops && n.op == op::attention) return rounding(single(step_kind::attention, id), id);
        if (o_.fused_ops && (n.op == op::swiglu || (o_.experts && n.op == op::swiglu_oai)))
            return rounding(single(step_kind::swiglu, id), id);
        return single(step_kind::op, id);
    }

    static bool same_shape(const node& a, const node& b) {
        return a.ne0 == b.ne0 && a.ne1 == b.ne1 && a.batched == b.batched;
    }

    step norm_step(int32_t norm, int32_t sum) {
        step s;
        s.kind = step_kind::norm;
        s.node = norm;
        s.sum = sum;
        if (sum >= 0) s.nodes.push_back(sum);
        s.nodes.push_back(norm);
        // The product with a one-column weight, when the norm's result is read by it alone.
        const auto& readers = readers_[norm];
        if (readers.size() == 1 && !readers_.output[std::size_t(norm)]) {
            const node& m = nd(readers[0]);
            const int64_t length = nd(norm).group > 0 ? nd(norm).group : m.ne0;  // a weight per group
            if (m.op == op::mul && m.src[0] == norm && nd(m.src[1]).op == op::weight && nd(m.src[1]).ne1 == 1 &&
                nd(m.src[1]).ne0 == length && m.src[1] != norm) {
                s.product = readers[0];
                s.nodes.push_back(s.product);
            }
        }
        if (nd(norm).group > 0) return s;  // Q8_1 records are laid out per column, not per group
        return rounding(std::move(s), s.product >= 0 ? s.product : norm);
    }

    // A producer whose result only quantized mul_mats read rounds it for them; so does one whose
    // result the mul_mat_ids of one experts step read as x, whoever else reads it.
    step rounding(step s, int32_t result) {
        if (!o_.round_in_producer) return s;
        const auto& readers = readers_[result];
        if (readers.empty() || nd(result).ne0 % 32 != 0) return s;
        if (only_quantized_readers(result)) {
            s.rounds = result;
            return s;
        }
        int32_t ids = -1;
        for (int32_t r : readers) {
            if (quantized_mul_mat(r)) return s;  // a matvec step too: one rounding goes to one step
            if (nd(r).op != op::mul_mat_id) continue;
            if (!expert_mul_mat(r) || nd(r).src[1] != result || (ids >= 0 && nd(r).src[2] != ids)) return s;
            ids = nd(r).src[2];
        }
        if (ids >= 0) s.rounds = result;
        return s;
    }
    // Whether every reader takes the result's rounding (then the result itself is never written).
    bool only_rounding_readers(int32_t result) const {
        for (int32_t r : readers_[result])
            if (!(quantized_mul_mat(r) || expert_mul_mat(r)) || nd(r).src[1] != result) return false;
        return true;
    }
    bool only_quantized_readers(int32_t result) const {
        for (int32_t r : readers_[result])
            if (!quantized_mul_mat(r) || nd(r).src[1] != result) return false;
        return true;
    }

    // The expert mul_mat_ids of x and ids, each with its bias's add_id; stacked when one swiglu
    // step reads both products, gate then up.
    step experts_step(int32_t first) {
        step s;
        s.kind = step_kind::experts;
        s.x = nd(first).src[1];
        const int32_t ids = nd(first).src[2];
        std::vector<int32_t> products;
        for (int32_t id : order_) {
            if (emitted_[std::size_t(id)] || !expert_mul_mat(id) || nd(id).src[1] != s.x || nd(id).src[2] != ids ||
                nd(id).n_expert != nd(first).n_expert)
                continue;
            s.nodes.push_back(id);
            const int32_t bias = bias_after(id);
            if (bias >= 0) s.nodes.push_back(bias);
            products.push_back(bias >= 0 ? bias : id);
        }
        if (o_.stack_products && o_.fused_ops && products.size() == 2 && readers_.only_read_by(products[0], reader_of(products[0])) &&
            readers_.only_read_by(products[1], reader_of(products[0]))) {
            const node& act = nd(reader_of(products[0]));
            if ((act.op == op::swiglu || act.op == op::swiglu_oai) && act.src[0] == products[0] && act.src[1] == products[1]) {
                s.stacked = true;
                s.rows_total = nd(products[0]).ne0 + nd(products[1]).ne0;
            }
        }
        return s;
    }
    int32_t reader_of(int32_t id) const { return readers_[id].empty() ? -1 : readers_[id][0]; }

    step matvec_step(int32_t first) {
        step s;
        s.kind = step_kind::matvec;
        s.x = nd(first).src[1];
        std::vector<int32_t> products;
        for (int32_t id : order_)
            if (!emitted_[std::size_t(id)] && quantized_mul_mat(id) && nd(id).src[1] == s.x) {
                s.nodes.push_back(id);
                const int32_t bias = o_.matvec_biases ? bias_after(id) : -1;
                if (bias >= 0) s.nodes.push_back(bias);
                products.push_back(bias >= 0 ? bias : id);
            }
        if (o_.stack_products && products.size() > 1) {
            // Stacked when only steps that take columns further apart read the products.
            bool readers_take_stacks = true;
            for (int32_t id : products) {
                if (readers_.output[std::size_t(id)] || readers_[id].empty()) readers_take_stacks = false;
                for (int32_t r : readers_[id]) readers_take_stacks = readers_take_stacks && stacked_reader(r) >= 0;
            }
            if (readers_take_stacks) {
                s.stacked = true;
                for (int32_t id : products) s.rows_total += nd(id).ne0;
            }
        }
        return s;
    }

    // The steps that may read stacked products: the swiglu node, a grouped norm (per-head q/k
    // norms), or the rope_cache step's first node (whichever of its nodes reads them). -1: none.
    int32_t stacked_reader(int32_t reader) const {
        if (o_.fused_ops && nd(reader).op == op::swiglu) return reader;
        if (o_.norms && o_.grouped_norms && nd(reader).op == op::rms_norm && nd(reader).group > 0) return reader;
        if (!o_.rope_cache) return -1;
        const step s = rope_cache_step(reader);
        return s.kind == step_kind::rope_cache ? s.q_rope : -1;
    }

    // rope(q), rope(k) -> K, v -> V for one attention node, found from any of those four nodes;
    // kind op when they do not form that pattern.
    step rope_cache_step(int32_t id) const {
        int32_t attention = -1;
        auto attention_among = [&](int32_t n) {
            for (int32_t r : readers_[n])
                if (nd(r).op == op::attention) attention = r;
        };
        attention_among(id);
        if (attention < 0 && nd(id).op == op::rope)  // k's rope: its set_rows leads to the attention
            for (int32_t r : readers_[id])
                if (nd(r).op == op::set_rows) attention_among(r);
        step none;
        if (attention < 0) return none;
        const node& a = nd(attention);
        const int32_t pos = a.src[3], qr = a.src[0], kc = a.src[1], vc = a.src[2];
        if (nd(qr).op != op::rope || nd(qr).src[1] != pos) return none;
        if (nd(kc).op != op::set_rows || nd(vc).op != op::set_rows) return none;
        if (nd(kc).src[2] != pos || nd(vc).src[2] != pos) return none;
        const int32_t kr = nd(kc).src[1];
        if (nd(kr).op != op::rope || nd(kr).src[1] != pos || !readers_.only_read_by(kr, kc)) return none;
        if (id != qr && id != kr && id != kc && id != vc) return none;
        // The caches are states written here alone, so moving the writes cannot pass a reader.
        if (nd(nd(kc).src[0]).op != op::state || !readers_.only_read_by(nd(kc).src[0], kc)) return none;
        if (nd(nd(vc).src[0]).op != op::state || !readers_.only_read_by(nd(vc).src[0], vc)) return none;
        const rope_params& rq = nd(qr).rope;
        const rope_params& rk = nd(kr).rope;
        if (rq.order != rk.order || rq.n_rot != rk.n_rot || rq.freq_base != rk.freq_base || rq.head_dim != rk.head_dim ||
            rq.freq_scale != rk.freq_scale || rq.ext_factor != rk.ext_factor || rq.attn_factor != rk.attn_factor ||
            rq.corr_low != rk.corr_low || rq.corr_high != rk.corr_high || nd(qr).src[2] != nd(kr).src[2])
            return none;
        step s;
        s.kind = step_kind::rope_cache;
        s.q_rope = qr;
        s.k_rope = kr;
        s.k_write = kc;
        s.v_write = vc;
        s.q_norm = o_.rope_norms ? head_norm_before(qr) : -1;
        s.k_norm = o_.rope_norms ? head_norm_before(kr) : -1;
        for (int32_t norm : {s.q_norm, s.k_norm})
            if (norm >= 0) {
                s.nodes.push_back(norm);
                s.nodes.push_back(readers_[norm][0]);  // its product with the weight
            }
        s.nodes.insert(s.nodes.end(), {qr, kr, kc, vc});
        s.node = qr;
        return s;
    }

    // The per-head rms_norm whose product with a head-long f32 weight is rope `rope`'s input, each
    // read by the next alone (-1: none).
    int32_t head_norm_before(int32_t rope) const {
        const int32_t m = nd(rope).src[0];
        const node& mul = nd(m);
        if (mul.op != op::mul || !readers_.only_read_by(m, rope)) return -1;
        const int32_t r = mul.src[0];
        const node& norm = nd(r);
        const node& w = nd(mul.src[1]);
        if (norm.op != op::rms_norm || norm.group != nd(rope).rope.head_dim || !readers_.only_read_by(r, m)) return -1;
        if (w.op != op::weight || w.type != qtype::f32 || w.ne0 != norm.group || w.ne1 != 1) return -1;
        return r;
    }
    // The rope after per-head rms_norm `norm` and its product (-1: none).
    int32_t rope_after_head_norm(int32_t norm) const {
        if (readers_[norm].size() != 1) return -1;
        const int32_t m = readers_[norm][0];
        if (readers_[m].size() != 1 || nd(readers_[m][0]).op != op::rope) return -1;
        const int32_t rope = readers_[m][0];
        return head_norm_before(rope) == norm ? rope : -1;
    }

    // Stacked products and rounded activations: which step hands what to which.
    void link_rounding() {
        for (std::size_t i = 0; i < out_.steps.size(); ++i) {
            step& s = out_.steps[i];
            if (s.kind == step_kind::matvec || s.kind == step_kind::experts) {
                const int32_t producer = out_.step_of[std::size_t(s.x)];
                if (producer >= 0 && out_.steps[std::size_t(producer)].rounds == s.x) {
                    s.rounded_by = producer;
                    out_.steps[std::size_t(producer)].rounded_for = int32_t(i);
                }
            }
        }
        // A producer whose result a matvec step does not take (mul_mats not grouped) keeps it.
        for (step& s : out_.steps)
            if (s.rounds >= 0 && s.rounded_for < 0) {
                out_.internal[std::size_t(s.rounds)] = 0;
                s.rounds = -1;
            }
    }

    // Which stacked matvec steps carry the swiglu after them: products gate, up in that order.
    // (Q/K/V carrying the rope_cache was measured slower on the H100: bench/RESULTS.md.)
    void link_epilogues() {
        if (o_.carry_expert_weights)
            for (std::size_t i = 0; i < out_.steps.size(); ++i) {
                step& s = out_.steps[i];
                if (s.kind != step_kind::op || nd(s.node).op != op::top_k) continue;
                for (std::size_t j = i + 1; j < out_.steps.size(); ++j) {
                    step& later = out_.steps[j];
                    if (later.kind != step_kind::op || later.carried_by >= 0) continue;
                    const node& w = nd(later.node);
                    if (w.op != op::expert_weights || w.src[0] != nd(s.node).src[0] || w.src[1] != s.node) continue;
                    s.carries = int32_t(j);
                    later.carried_by = int32_t(i);
                    break;
                }
            }
        if (o_.experts)
            for (std::size_t i = 0; i < out_.steps.size(); ++i) link_weighted_sum(i);
        if (o_.carry_norm)
            for (std::size_t i = 0; i + 1 < out_.steps.size(); ++i) link_norm(i);
        if (!o_.carry_swiglu) return;
        for (std::size_t i = 0; i + 1 < out_.steps.size(); ++i) {
            step& s = out_.steps[i];
            step& next = out_.steps[i + 1];
            if ((s.kind != step_kind::matvec && s.kind != step_kind::experts) || !s.stacked || next.kind != step_kind::swiglu)
                continue;
            const node& sw = nd(next.node);
            if (stacked_results(s) != std::vector<int32_t>{sw.src[0], sw.src[1]} || sw.ne0 % 32 != 0) continue;
            s.carries = int32_t(i + 1);
            next.carried_by = int32_t(i);
        }
    }

    // A matvec step of one product, or the weighted_sum an experts step carries, carries the norm
    // step right after it whose residual add takes the product (its only reader) as one addend:
    // the launch's last CTA (of each token, for the weighted_sum) finishes the norm.
    void link_norm(std::size_t i) {
        step& s = out_.steps[i];
        step& next = out_.steps[i + 1];
        const bool matvec = s.kind == step_kind::matvec && !s.stacked;
        const bool weighted = s.kind == step_kind::op && nd(s.node).op == op::weighted_sum && s.carried_by >= 0 &&
                              out_.steps[std::size_t(s.carried_by)].kind == step_kind::experts;
        if ((!matvec && !weighted) || s.carries >= 0 || next.kind != step_kind::norm || next.sum < 0 || next.carried_by >= 0)
            return;
        const std::vector<int32_t> results = matvec ? stacked_results(s) : std::vector<int32_t>{s.node};
        if (results.size() != 1) return;
        const int32_t product = results[0];
        const node& sum = nd(next.sum);
        if (readers_.output[std::size_t(product)] || readers_[product] != std::vector<int32_t>{next.sum} ||
            (sum.src[0] == product) == (sum.src[1] == product) || !same_shape(nd(product), sum))
            return;
        s.carries = int32_t(i + 1);
        next.carried_by = int32_t(i);
    }

    // The results of a matvec or experts step's products in order (product_result).
    std::vector<int32_t> stacked_results(const step& s) const {
        std::vector<int32_t> results;
        for (std::size_t i = 0; i < s.nodes.size(); ++i)
            if (nd(s.nodes[i]).op == op::mul_mat || nd(s.nodes[i]).op == op::mul_mat_id)
                results.push_back(product_result(nodes_, s, i));
        return results;
    }

    // An experts step of one product (no stack) carries the weighted_sum that alone reads it,
    // when the weights are computed by an earlier step: its launch's last CTA of each row tile
    // and token adds the slots there.
    void link_weighted_sum(std::size_t i) {
        step& s = out_.steps[i];
        if (s.kind != step_kind::experts || s.stacked || s.carries >= 0) return;
        const int32_t product = s.nodes.back();
        if (std::count_if(s.nodes.begin(), s.nodes.end(), [&](int32_t id) { return nd(id).op == op::mul_mat_id; }) != 1 ||
            readers_[product].size() != 1)
            return;
        const int32_t ws = readers_[product][0];
        if (nd(ws).op != op::weighted_sum || nd(ws).src[0] != product) return;
        const int32_t j = out_.step_of[std::size_t(ws)];
        int32_t weights_at = out_.step_of[std::size_t(nd(ws).src[1])];
        if (j < 0 || weights_at < 0) return;
        step& later = out_.steps[std::size_t(j)];
        if (later.kind != step_kind::op || later.node != ws || later.carried_by >= 0) return;
        if (out_.steps[std::size_t(weights_at)].carried_by >= 0) weights_at = out_.steps[std::size_t(weights_at)].carried_by;
        if (weights_at >= int32_t(i)) return;
        s.carries = j;
        later.carried_by = int32_t(i);
    }

    void collect_checks() {
        auto add = [&](int32_t reader, int src, int64_t limit) {
            const int32_t ids = nd(reader).src[std::size_t(src)];
            if (nd(ids).op != op::input) return;
            for (index_check& c : out_.checks)
                if (c.input == ids) {
                    if (limit < c.limit) c = {ids, limit, reader};
                    return;
                }
            out_.checks.push_back({ids, limit, reader});
        };
        for (int32_t id : order_) {
            const node& n = nd(id);
            switch (n.op) {
                case op::get_rows: add(id, 1, nd(n.src[0]).ne1); break;
                case op::rope: add(id, 1, std::numeric_limits<int32_t>::max()); break;
                case op::set_rows: add(id, 2, n.ne1); break;
                case op::attention: add(id, 3, nd(n.src[1]).ne1); break;
                case op::expert_weights: add(id, 1, nd(n.src[0]).ne0); break;
                case op::mul_mat_id: add(id, 2, n.n_expert); break;
                case op::add_id: add(id, 2, n.n_expert); break;
                default: break;
            }
        }
    }

    const std::vector<node>& nodes_;
    const std::vector<int32_t>& order_;
    lower_options o_;
    readers_of readers_;
    std::vector<uint8_t> emitted_;
    lowered out_;
};

}  // namespace detail

// Steps for the planned nodes of g in `order` (a topological order, leaves first).
inline lowered lower(const graph& g, const std::vector<int32_t>& order, const lower_options& options = {}) {
    return detail::lowering(g, order, options).run();
}

}  // namespace llmrt::graph
