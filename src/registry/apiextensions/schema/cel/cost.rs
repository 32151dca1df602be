//! The worst-case cost of a checked rule, as cel-go's estimator (`checker/cost.go`) computes
//! it with apiserver's `library.CostEstimator` (`k8s.io/apiserver/pkg/cel/library/cost.go`)
//! and apiextensions' size estimator (sizes from the schema's `maxLength`, `maxItems` and
//! `maxProperties`, else from the largest request, through [`Decl`]).
//!
//! Costs are cel-go's units: 1 per identifier, selection and O(1) call, 0.1 per character a
//! string function traverses, comprehensions their range's size times their body's cost.
//! The Kubernetes and extension functions are costed by name, as upstream's estimator does;
//! a call this module does not know costs 1 plus its arguments (cel-go's default).

use std::collections::HashMap;
use std::sync::Arc;

use ::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

use super::check::{Checked, Decl, DeclKind, Ty};

/// A range of sizes or costs (cel-go's `SizeEstimate` and `CostEstimate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Est {
    min: u64,
    max: u64,
}

const UNKNOWN: Est = Est { min: 0, max: u64::MAX };
const STRING_TRAVERSAL: f64 = 0.1;
const REGEX_LENGTH: f64 = 0.25;

impl Est {
    fn fixed(n: u64) -> Est {
        Est { min: n, max: n }
    }

    fn add(self, o: Est) -> Est {
        Est { min: self.min.saturating_add(o.min), max: self.max.saturating_add(o.max) }
    }

    fn mul(self, o: Est) -> Est {
        Est { min: self.min.saturating_mul(o.min), max: self.max.saturating_mul(o.max) }
    }

    fn factor(self, f: f64) -> Est {
        Est { min: by_factor(self.min, f), max: by_factor(self.max, f) }
    }

    fn union(self, o: Est) -> Est {
        Est { min: self.min.min(o.min), max: self.max.max(o.max) }
    }
}

/// cel-go's `multiplyByCostFactor`: rounded up, saturating.
fn by_factor(x: u64, f: f64) -> u64 {
    let xf = x as f64;
    if xf > 0.0 && f > 0.0 && xf > u64::MAX as f64 / f {
        return u64::MAX;
    }
    let ceil = (xf * f).ceil();
    if ceil >= 18_446_744_073_709_551_616.0 { u64::MAX } else { ceil as u64 }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Container {
    List,
    Map,
    Unknown,
}

/// cel-go's `entrySizeEstimate`: the sizes of a container literal's keys and values.
#[derive(Debug, Clone, Copy)]
struct Entry {
    container: Container,
    key: Est,
    val: Est,
}

fn union_entries(a: Option<Entry>, b: Option<Entry>) -> Option<Entry> {
    let (a, b) = (a?, b?);
    Some(Entry { container: a.container, key: a.key.union(b.key), val: a.val.union(b.val) })
}

#[derive(Debug, Clone)]
struct Local {
    path: Vec<String>,
    size: Option<Est>,
    entry: Option<Entry>,
}

/// What the estimator knows of an argument (cel-go's `AstNode`).
struct Node {
    path: Option<Vec<String>>,
    ty: Ty,
    computed: Option<Est>,
    /// Its value, when it is an int literal.
    int: Option<i64>,
}

/// The most `expr` may cost, `root` being `self`'s declaration.
pub fn estimate(expr: &IdedExpr, checked: &Checked, root: &Arc<Decl>) -> u64 {
    let mut coster =
        Coster { checked, root, paths: HashMap::new(), locals: HashMap::new(), sizes: HashMap::new(), entries: HashMap::new() };
    coster.cost(expr).max
}

struct Coster<'a> {
    checked: &'a Checked,
    root: &'a Arc<Decl>,
    paths: HashMap<u64, Vec<String>>,
    locals: HashMap<String, Vec<Local>>,
    sizes: HashMap<u64, Est>,
    entries: HashMap<u64, Entry>,
}

/// The key declaration of a map: a string upstream declares without a bound.
static KEY: Decl = Decl { kind: DeclKind::String, max_elements: 0, min_size: 2 };

impl Coster<'_> {
    /// apiextensions' `sizeEstimator.EstimateSize`: the bound the schema sets at `path`
    /// (its first step, the variable, is `self`'s node).
    fn estimate_size(&self, path: &[String]) -> Option<Est> {
        if path.is_empty() {
            return None;
        }
        let mut node: &Decl = self.root;
        for name in &path[1..] {
            node = match (name.as_str(), &node.kind) {
                ("@keys", DeclKind::Map(_)) => &KEY,
                ("@keys", _) => return None,
                _ => node.step(name)?.as_ref(),
            };
        }
        Some(Est { min: 0, max: node.max_elements })
    }

    fn local(&self, name: &str) -> Option<&Local> {
        self.locals.get(name).and_then(|stack| stack.last())
    }

    fn push_local(&mut self, name: &str, local: Local) {
        self.locals.entry(name.to_owned()).or_default().push(local);
    }

    fn pop_local(&mut self, name: &str) {
        if let Some(stack) = self.locals.get_mut(name) {
            stack.pop();
        }
    }

    fn ty(&self, e: &IdedExpr) -> &Ty {
        self.checked.type_of(e.id)
    }

    fn path(&self, e: &IdedExpr) -> Vec<String> {
        if let Expr::Ident(name) = &e.expr
            && let Some(local) = self.local(name)
        {
            return local.path.clone();
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    /// cel-go's `computeSize`.
    fn size(&mut self, e: &IdedExpr) -> Option<Est> {
        if let Some(size) = self.sizes.get(&e.id) {
            return Some(*size);
        }
        if let Some(size) = literal_size(e) {
            return Some(size);
        }
        if let Some(size) = self.estimate_size(&self.path(e)) {
            self.sizes.insert(e.id, size);
            return Some(size);
        }
        if is_scalar(self.ty(e)) {
            return Some(Est::fixed(1));
        }
        if let Expr::Ident(name) = &e.expr {
            return self.local(name).and_then(|l| l.size);
        }
        None
    }

    fn size_or_unknown(&mut self, e: &IdedExpr) -> Est {
        self.size(e).unwrap_or(UNKNOWN)
    }

    fn entry(&self, e: &IdedExpr) -> Option<Entry> {
        if let Some(entry) = self.entries.get(&e.id) {
            return Some(*entry);
        }
        if let Expr::Ident(name) = &e.expr {
            return self.local(name).and_then(|l| l.entry);
        }
        None
    }

    fn node(&mut self, e: &IdedExpr) -> Node {
        let path = self.path(e);
        // Only paths from the variables: none for the accumulator.
        let path = if path.is_empty() || path[0] == "@result" || path[0] == "__result__" { None } else { Some(path) };
        let int = match &e.expr {
            Expr::Literal(LiteralValue::Int(i)) => Some(*i.inner()),
            _ => None,
        };
        Node { path, ty: self.ty(e).clone(), computed: self.size(e), int }
    }

    /// apiserver's `CostEstimator.sizeEstimate`.
    fn node_size(&self, node: &Node) -> Est {
        node.computed.or_else(|| node.path.as_deref().and_then(|p| self.estimate_size(p))).unwrap_or(UNKNOWN)
    }

    fn cost(&mut self, e: &IdedExpr) -> Est {
        match &e.expr {
            Expr::Literal(_) => Est::fixed(0),
            Expr::Ident(name) => {
                let path = self.local(name).map_or_else(|| vec![name.clone()], |l| l.path.clone());
                self.paths.insert(e.id, path);
                Est::fixed(1)
            }
            Expr::Select(select) => {
                let operand = self.cost(&select.operand);
                if select.test {
                    return operand.add(Est::fixed(1));
                }
                let mut sum = operand;
                if matches!(self.ty(&select.operand), Ty::Map(..) | Ty::Object(_) | Ty::Param(_)) {
                    sum = sum.add(Est::fixed(1));
                }
                let mut path = self.path(&select.operand);
                path.push(select.field.clone());
                self.paths.insert(e.id, path);
                sum
            }
            Expr::Call(call) => self.call(e, &call.func_name, call.target.as_deref(), &call.args),
            Expr::List(list) => {
                let mut sum = Est::fixed(0);
                let mut item = Est { min: if list.elements.is_empty() { 0 } else { u64::MAX }, max: 0 };
                for element in &list.elements {
                    sum = sum.add(self.cost(element));
                    item = item.union(self.size_or_unknown(element));
                }
                self.entries.insert(e.id, Entry { container: Container::List, key: Est::fixed(1), val: item });
                sum.add(Est::fixed(10))
            }
            Expr::Map(map) => {
                let mut sum = Est::fixed(0);
                let empty = if map.entries.is_empty() { 0 } else { u64::MAX };
                let (mut key, mut val) = (Est { min: empty, max: 0 }, Est { min: empty, max: 0 });
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        sum = sum.add(self.cost(&m.key)).add(self.cost(&m.value));
                        key = key.union(self.size_or_unknown(&m.key));
                        val = val.union(self.size_or_unknown(&m.value));
                    }
                }
                self.entries.insert(e.id, Entry { container: Container::Map, key, val });
                sum.add(Est::fixed(30))
            }
            Expr::Struct(s) => {
                let mut sum = Est::fixed(40);
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        sum = sum.add(self.cost(&f.value));
                    }
                }
                sum
            }
            Expr::Comprehension(c) => {
                let mut sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
                let accu = Local { path: self.path(&c.accu_init), size: self.size(&c.accu_init), entry: self.entry(&c.accu_init) };
                self.push_local(&c.accu_var, accu);
                let range_entry = self.entry(&c.iter_range);
                let container = match range_entry.map_or(Container::Unknown, |e| e.container) {
                    Container::Unknown => match self.ty(&c.iter_range) {
                        Ty::List(_) => Container::List,
                        Ty::Map(..) => Container::Map,
                        _ => Container::Unknown,
                    },
                    known => known,
                };
                let range_path = self.path(&c.iter_range);
                let with = |step: &str| {
                    let mut p = range_path.clone();
                    p.push(step.to_owned());
                    p
                };
                let list = container == Container::List;
                if let Some(second) = &c.iter_var2 {
                    let key = Local { path: with(if list { "@indices" } else { "@keys" }), size: range_entry.map(|e| e.key), entry: None };
                    let value =
                        Local { path: with(if list { "@items" } else { "@values" }), size: range_entry.map(|e| e.val), entry: None };
                    self.push_local(&c.iter_var, key);
                    self.push_local(second, value);
                } else {
                    let single = if list {
                        Local { path: with("@items"), size: range_entry.map(|e| e.val), entry: None }
                    } else {
                        Local { path: with("@keys"), size: range_entry.map(|e| e.key), entry: None }
                    };
                    self.push_local(&c.iter_var, single);
                }
                let loop_cost = self.cost(&c.loop_cond);
                let step_cost = self.cost(&c.loop_step);
                self.pop_local(&c.iter_var);
                if let Some(second) = &c.iter_var2 {
                    self.pop_local(second);
                }
                sum = sum.add(self.cost(&c.result));
                self.pop_local(&c.accu_var);
                let range = self.size_or_unknown(&c.iter_range);
                sum = sum.add(range.mul(step_cost.add(loop_cost)));
                match &c.accu_init.expr {
                    Expr::Literal(_) => {
                        if let Some(size) = self.size(&c.accu_init) {
                            self.sizes.insert(e.id, size);
                        }
                    }
                    Expr::List(_) | Expr::Map(_) => {
                        self.sizes.insert(e.id, range);
                        if let Some(entry) = self.entry(&c.loop_step) {
                            self.entries.insert(e.id, entry);
                        }
                    }
                    _ => {}
                }
                sum
            }
            Expr::Unspecified => Est::fixed(0),
        }
    }

    /// cel-go's `costCall`.
    fn call(&mut self, e: &IdedExpr, function: &str, target: Option<&IdedExpr>, args: &[IdedExpr]) -> Est {
        if function == "dyn"
            && let [arg] = args
        {
            let cost = self.cost(arg);
            if let Some(size) = self.size(arg) {
                self.sizes.insert(e.id, size);
            }
            if let Some(entry) = self.entry(arg) {
                self.entries.insert(e.id, entry);
            }
            return cost.add(Est::fixed(1));
        }
        // A namespaced function's target names its namespace: not evaluated.
        let namespace = target.and_then(|t| match &t.expr {
            Expr::Ident(ns) if self.local(ns).is_none() && is_namespace(ns) => Some(ns.clone()),
            _ => None,
        });
        let (function, target) = match &namespace {
            Some(ns) => (format!("{ns}.{function}"), None),
            None => (function.to_owned(), target),
        };
        let mut arg_costs = Vec::with_capacity(args.len());
        let mut nodes = Vec::with_capacity(args.len());
        for arg in args {
            arg_costs.push(self.cost(arg));
            nodes.push(self.node(arg));
        }
        let mut sum = Est::fixed(0);
        let target_node = match target {
            Some(t) => {
                sum = sum.add(self.cost(t));
                Some(self.node(t))
            }
            None => None,
        };
        let overloads: Vec<&'static str> = match self.checked.overloads.get(&e.id) {
            Some(ids) if !ids.is_empty() => ids.clone(),
            // A function declared by name only: upstream's estimator keys on the name.
            _ => vec![""],
        };
        let mut fn_cost = Est { min: u64::MAX, max: 0 };
        let mut result_size: Option<Est> = None;
        for overload in overloads {
            let (cost, size) = self.function_cost(e, &function, overload, target_node.as_ref(), &nodes, args, &arg_costs);
            fn_cost = fn_cost.union(cost);
            if let Some(size) = size {
                result_size = Some(result_size.map_or(size, |r| r.union(size)));
            }
            match overload {
                "index_list" | "index_map" => {
                    if let Some(first) = args.first() {
                        result_size = self.entry(first).map(|entry| entry.val);
                        let mut path = self.path(first);
                        path.push(if overload == "index_list" { "@items" } else { "@values" }.to_owned());
                        self.paths.insert(e.id, path);
                    }
                }
                _ => {}
            }
            if result_size.is_none() {
                result_size = self.size(e);
            }
        }
        if let Some(size) = result_size {
            self.sizes.insert(e.id, size);
        }
        sum.add(fn_cost)
    }

    /// cel-go's `functionCost`, after apiserver's estimator ([`Coster::kubernetes_cost`]).
    #[allow(clippy::too_many_arguments)]
    fn function_cost(
        &mut self,
        e: &IdedExpr,
        function: &str,
        overload: &str,
        target: Option<&Node>,
        nodes: &[Node],
        args: &[IdedExpr],
        arg_costs: &[Est],
    ) -> (Est, Option<Est>) {
        let arg_sum = arg_costs.iter().fold(Est::fixed(0), |s, c| s.add(*c));
        // cel-go's sets extension declares its own estimates: m × n comparisons.
        let sets = match function {
            "sets.contains" | "sets.intersects" => Some(1.0),
            "sets.equivalent" => Some(2.0),
            _ => None,
        };
        if let (Some(factor), [a, b]) = (sets, nodes) {
            let cost = self.node_size(a).mul(self.node_size(b)).factor(factor).add(Est::fixed(1));
            return (cost.add(arg_sum), None);
        }
        // And its lists extension (version 3), for the calls that make a list.
        if let Some((cost, size)) = self.lists_cost(function, target, nodes) {
            return (cost.add(arg_sum), Some(size));
        }
        if let Some((cost, size)) = self.kubernetes_cost(function, target, nodes) {
            return (cost.add(arg_sum), size);
        }
        let computed = |n: &Node| n.computed.unwrap_or(UNKNOWN);
        match (overload, function) {
            (_, "format") if target.is_some() => {
                return (target.map_or(UNKNOWN, computed).factor(STRING_TRAVERSAL).add(arg_sum), None);
            }
            ("string_to_bytes", _) if nodes.len() == 1 => {
                let sz = computed(&nodes[0]);
                return (sz.factor(STRING_TRAVERSAL).add(arg_sum), Some(Est { min: sz.min, max: sz.max.saturating_mul(4) }));
            }
            ("bytes_to_string", _) if nodes.len() == 1 => {
                let sz = computed(&nodes[0]);
                return (sz.factor(STRING_TRAVERSAL).add(arg_sum), Some(Est { min: sz.min / 4, max: sz.max }));
            }
            (_, "strings.quote") if nodes.len() == 1 => {
                let sz = computed(&nodes[0]);
                let size = Est { min: sz.min.saturating_add(2), max: sz.max.saturating_mul(2).saturating_add(2) };
                return (sz.factor(STRING_TRAVERSAL).add(arg_sum), Some(size));
            }
            ("starts_with_string" | "ends_with_string", _) if nodes.len() == 1 => {
                return (computed(&nodes[0]).factor(STRING_TRAVERSAL).add(arg_sum), None);
            }
            ("in_list", _) if nodes.len() == 2 => return (computed(&nodes[1]).factor(1.0).add(arg_sum), None),
            ("matches_string", _) if nodes.len() == 1 => {
                if let Some(target) = target {
                    let string = computed(target).add(Est::fixed(1)).factor(STRING_TRAVERSAL);
                    let regex = computed(&nodes[0]).factor(REGEX_LENGTH);
                    return (string.mul(regex).add(arg_sum), None);
                }
            }
            ("contains_string", _) if nodes.len() == 1 => {
                if let Some(target) = target {
                    let string = computed(target).factor(STRING_TRAVERSAL);
                    let sub = computed(&nodes[0]).factor(STRING_TRAVERSAL);
                    return (string.mul(sub).add(arg_sum), None);
                }
            }
            ("logical_or" | "logical_and", _) if arg_costs.len() == 2 => {
                let (lhs, rhs) = (arg_costs[0], arg_costs[1]);
                return (Est { min: lhs.min, max: lhs.add(rhs).max }, None);
            }
            ("conditional", _) if args.len() == 3 => {
                let size = computed(&nodes[1]).union(computed(&nodes[2]));
                if let Some(entry) = union_entries(self.entry(&args[1]), self.entry(&args[2])) {
                    self.entries.insert(e.id, entry);
                }
                return (arg_costs[0].add(arg_costs[1].union(arg_costs[2])), Some(size));
            }
            ("add_string" | "add_bytes" | "add_list", _) if args.len() == 2 => {
                let size = computed(&nodes[0]).add(computed(&nodes[1]));
                if let Some(entry) = union_entries(self.entry(&args[0]), self.entry(&args[1])) {
                    self.entries.insert(e.id, entry);
                }
                return if overload == "add_list" {
                    (Est::fixed(1).add(arg_sum), Some(size))
                } else {
                    (size.factor(STRING_TRAVERSAL).add(arg_sum), Some(size))
                };
            }
            (
                "less_string"
                | "greater_string"
                | "less_equals_string"
                | "greater_equals_string"
                | "less_bytes"
                | "greater_bytes"
                | "less_equals_bytes"
                | "greater_equals_bytes"
                | "equals"
                | "not_equals",
                _,
            ) if nodes.len() == 2 => {
                let smallest = computed(&nodes[0]).max.min(computed(&nodes[1]).max);
                let min = u64::from(smallest > 0);
                return (Est { min, max: smallest }.factor(STRING_TRAVERSAL).add(arg_sum), None);
            }
            _ => {}
        }
        (Est::fixed(1).add(arg_sum), None)
    }

    /// cel-go's lists extension's estimates (`estimateAllocatingListCall`): the call, the new
    /// list, and a factor of the list's size.
    fn lists_cost(&self, function: &str, target: Option<&Node>, args: &[Node]) -> Option<(Est, Est)> {
        let allocating = |factor: f64, size: Est| (size.factor(factor).add(Est::fixed(1 + 10)), size);
        let literal = |n: &Node, default: u64| n.int.map_or(default, |i| i as u64);
        if function == "lists.range" && target.is_none() && args.len() == 1 {
            return Some(allocating(1.0, Est::fixed(literal(&args[0], u64::MAX))));
        }
        let target = target.filter(|t| matches!(t.ty, Ty::List(_)))?;
        let size = self.node_size(target);
        Some(match (function, args) {
            ("reverse", []) => allocating(1.0, size),
            ("distinct", []) => allocating(2.0, size.mul(size)),
            ("sort", []) => {
                let strings = matches!(&target.ty, Ty::List(e) if matches!(**e, Ty::String | Ty::Bytes));
                allocating(if strings { 2.0 + STRING_TRAVERSAL } else { 2.0 }, size.mul(size))
            }
            ("flatten", []) => allocating(1.0, size),
            ("flatten", [depth]) => allocating(literal(depth, u64::MAX) as f64, size),
            ("slice", [start, end]) => allocating(1.0, Est::fixed(literal(end, size.max).wrapping_sub(literal(start, 0)))),
            _ => return None,
        })
    }

    /// apiserver's `CostEstimator.EstimateCallCost`: by function name.
    fn kubernetes_cost(&self, function: &str, target: Option<&Node>, args: &[Node]) -> Option<(Est, Option<Est>)> {
        let one = Some((Est::fixed(1), None));
        let traverse = |n: &Node| self.node_size(n).factor(STRING_TRAVERSAL);
        match function {
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
                let target = target?;
                let element = match &target.ty {
                    Ty::List(e) => Some((**e).clone()),
                    Ty::Map(k, _) => Some((**k).clone()),
                    Ty::Optional(t) => Some((**t).clone()),
                    _ => None,
                };
                match element {
                    Some(element) => {
                        let mut per = Est::fixed(1);
                        if matches!(element, Ty::String | Ty::Bytes) {
                            let path = target.path.as_ref().map(|p| {
                                let mut p = p.clone();
                                p.push("@items".to_owned());
                                p
                            });
                            let node = Node { path, ty: element, computed: None, int: None };
                            per = per.add(self.node_size(&node).factor(STRING_TRAVERSAL));
                        }
                        Some((self.node_size(target).mul(per), None))
                    }
                    None => Some((self.node_size(target).factor(STRING_TRAVERSAL), None)),
                }
            }
            "url" | "jsonpatch.escapeKey" if args.len() == 1 => {
                let sz = self.node_size(&args[0]);
                Some((sz.factor(STRING_TRAVERSAL), Some(sz)))
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                let sz = self.node_size(target?);
                Some((sz.factor(STRING_TRAVERSAL), Some(sz)))
            }
            "replace" if args.len() >= 2 => {
                let sz = self.node_size(target?);
                let (from, to) = (self.node_size(&args[0]), self.node_size(&args[1]));
                let (mut count, mut retained) = (Est::fixed(0), Est::fixed(0));
                if from.min == 0 {
                    count.max = if sz.max < u64::MAX { sz.max + 1 } else { sz.max };
                    retained.max = sz.max;
                } else if to.max <= from.min {
                    retained.max = sz.max;
                } else {
                    count.max = (sz.max as f64 / from.min as f64).ceil() as u64;
                }
                if from.max == 0 {
                    count.min = if sz.min < u64::MAX { sz.min + 1 } else { sz.min };
                    retained.min = sz.min;
                } else if from.max <= to.min {
                    retained.min = sz.min;
                } else {
                    count.min = (sz.min as f64 / from.max as f64).ceil() as u64;
                }
                let size = count.mul(to).add(retained);
                Some((sz.factor(2.0 * STRING_TRAVERSAL), Some(size)))
            }
            "split" => {
                let sz = self.node_size(target?);
                let mut max = sz.max;
                if let Some(limit) = args.get(1).and_then(|a| a.int) {
                    max = limit as u64;
                }
                Some((sz.factor(2.0 * STRING_TRAVERSAL), Some(Est { min: 0, max })))
            }
            "join" => {
                let target = target?;
                let list = self.node_size(target);
                let mut size = Est::fixed(0);
                if let Ty::List(element) = &target.ty {
                    let path = target.path.as_ref().map(|p| {
                        let mut p = p.clone();
                        p.push("@items".to_owned());
                        p
                    });
                    let node = Node { path, ty: (**element).clone(), computed: None, int: None };
                    size = list.mul(self.node_size(&node));
                }
                if let Some(separator) = args.first() {
                    let separators = Est { min: list.min.saturating_sub(1), max: list.max.saturating_sub(1) };
                    size = size.add(self.node_size(separator).mul(separators));
                }
                Some((size.factor(STRING_TRAVERSAL), Some(size)))
            }
            "find" | "findAll" if !args.is_empty() => {
                let sz = self.node_size(target?);
                let string = sz.add(Est::fixed(1)).factor(STRING_TRAVERSAL);
                let regex = self.node_size(&args[0]).factor(REGEX_LENGTH);
                Some((string.mul(regex), Some(Est { min: 0, max: sz.max })))
            }
            "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver" if !args.is_empty() => {
                Some((traverse(&args[0]), None))
            }
            "ip" => {
                if target.is_some() {
                    return one;
                }
                Some((traverse(args.first()?), None))
            }
            "ip.isCanonical" if !args.is_empty() => Some((self.node_size(&args[0]).factor(2.0 * STRING_TRAVERSAL), None)),
            "masked"
            | "prefixLength"
            | "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast" => one,
            "containsIP" | "containsCIDR" if !args.is_empty() => {
                let sz = Est { min: 4, max: 16 };
                let mut cost = sz.add(sz).factor(STRING_TRAVERSAL);
                if function == "containsCIDR" {
                    cost = cost.add(sz.factor(STRING_TRAVERSAL)).add(Est::fixed(1));
                }
                if args[0].ty == Ty::String {
                    cost = cost.add(traverse(&args[0]));
                }
                Some((cost, None))
            }
            "validate" if !args.is_empty() => Some((traverse(&args[0]).factor(128.0 * REGEX_LENGTH), None)),
            "format.named" | "sign" | "asInteger" | "isInteger" | "asApproximateFloat" | "isGreaterThan" | "isLessThan" | "compareTo"
            | "add" | "sub" | "major" | "minor" | "patch" | "getScheme" | "getHostname" | "getHost" | "getPort" | "getEscapedPath"
            | "getQuery" => one,
            "_==_" if args.len() == 2 && args[0].ty == args[1].ty => match &args[0].ty {
                Ty::Opaque("kubernetes.NamedFormat") => Some((Est { min: 1, max: 64 }.factor(STRING_TRAVERSAL), None)),
                Ty::Opaque("kubernetes.URL") => Some((Est::fixed(1).factor(STRING_TRAVERSAL), None)),
                Ty::Opaque(_) => one,
                _ => None,
            },
            _ => None,
        }
    }
}

fn is_namespace(name: &str) -> bool {
    matches!(name, "optional" | "strings" | "sets" | "math" | "base64" | "lists" | "format" | "ip")
}

/// cel-go's `computeExprSize`: the size of a literal.
fn literal_size(e: &IdedExpr) -> Option<Est> {
    Some(Est::fixed(match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => s.inner().chars().count() as u64,
        Expr::Literal(LiteralValue::Bytes(b)) => b.inner().len() as u64,
        Expr::Literal(_) => 1,
        Expr::List(list) => list.elements.len() as u64,
        Expr::Map(map) => map.entries.len() as u64,
        _ => return None,
    }))
}

/// cel-go's `isScalar`: a type of one size.
fn is_scalar(t: &Ty) -> bool {
    match t {
        Ty::Bool | Ty::Double | Ty::Duration | Ty::Int | Ty::Timestamp | Ty::Uint => true,
        Ty::Optional(inner) => is_scalar(inner),
        _ => false,
    }
}
