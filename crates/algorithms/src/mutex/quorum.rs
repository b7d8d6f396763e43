//! Quorums (request sets) for Maekawa's algorithm: every node's quorum contains the node itself,
//! and every two quorums share at least one node.
//!
//! Source: seed 003 "Maekawa's algorithm" (conditions `i ∈ S_i` and `S_i ∩ S_j ≠ ∅`), with the
//! two classic constructions:
//! - **plane**: the lines of the finite projective plane PG(2, q) of order q, a prime power.
//!   It has N = q² + q + 1 points and as many lines; every line has K = q + 1 points and every two
//!   lines meet in exactly one point. Points are the one-dimensional subspaces of GF(q)³, lines the
//!   two-dimensional ones (given by a normal vector); point p lies on line l when p · l = 0. Each
//!   node is a point, and is given a line through it by a perfect matching of the incidence graph
//!   (it exists: the graph is (q+1)-regular and bipartite). Prime powers that are not primes
//!   (4, 8, 9, 16, ...) use GF(p^m) arithmetic modulo an irreducible polynomial. So N = 7, 13,
//!   21, 31, 57, 73, 91, 133, ... and K = 3, 4, 5, 6, 8, 9, 10, 12, ...
//! - **grid**: the nodes fill a grid row by row, `ceil(sqrt N)` columns wide (the last row may
//!   be short); a node's quorum is its row and its column, about 2 sqrt(N) - 1 nodes. Two nodes
//!   meet at the crossing of one's row and the other's column; when that cell is missing from a
//!   short last row, the other crossing exists.
//!
//! `quorums = "plane" | "grid"` in the scenario selects; by default the plane when N allows it,
//! the grid otherwise.

use distsync_core::{NodeId, ParamError, Params, Peers, QuorumKind};

/// The order q of the projective plane with `n` points, when there is one: `n = q² + q + 1`
/// with q a prime power.
///
/// ```
/// use distsync_algorithms::mutex::quorum::plane_order;
/// assert_eq!(plane_order(7), Some(2));
/// assert_eq!(plane_order(21), Some(4)); // GF(4) is not the integers mod 4
/// assert_eq!(plane_order(111), None); // q = 10 is not a prime power
/// assert_eq!(plane_order(3), None); // q = 1 is not a prime power
/// ```
pub fn plane_order(n: usize) -> Option<usize> {
    let mut q = 1usize;
    while q * q + q + 1 < n {
        q += 1;
    }
    (q * q + q + 1 == n && prime_power(q).is_some()).then_some(q)
}

/// The construction used when the scenario names none: the plane if N allows it, else the grid.
pub fn default_kind(n: usize) -> QuorumKind {
    if plane_order(n).is_some() {
        QuorumKind::Plane
    } else {
        QuorumKind::Grid
    }
}

/// The quorums of `n` nodes by membership position: `result[i]` is node i's quorum, sorted,
/// containing i.
pub fn quorums(n: usize, kind: QuorumKind) -> Result<Vec<Vec<usize>>, String> {
    match kind {
        QuorumKind::Grid => Ok(grid(n)),
        QuorumKind::Plane => match plane_order(n) {
            Some(q) => Ok(plane(q)),
            None => Err(format!(
                "a projective-plane quorum needs N = q*q + q + 1 nodes with q a prime power \
                 (N = 7, 13, 21, 31, 57, 73, 91, 133, ...), but there are {n} nodes; \
                 use quorums = \"grid\""
            )),
        },
    }
}

/// The quorums of a membership, as node ids, following `params.quorums` (field `quorums`).
pub fn for_params(peers: &Peers, params: &Params) -> Result<Vec<Vec<NodeId>>, ParamError> {
    let n = peers.len();
    let kind = params.quorums.unwrap_or_else(|| default_kind(n));
    let by_position = quorums(n, kind).map_err(|m| ParamError::new("quorums", m))?;
    Ok(by_position
        .into_iter()
        .map(|q| q.into_iter().map(|p| peers.ids()[p]).collect())
        .collect())
}

/// Row-and-column quorums on a grid `ceil(sqrt n)` wide.
fn grid(n: usize) -> Vec<Vec<usize>> {
    let cols = (1..=n).find(|c| c * c >= n).unwrap_or(1);
    (0..n)
        .map(|i| {
            let (row, col) = (i / cols, i % cols);
            let mut q: Vec<usize> = (0..n)
                .filter(|&j| j / cols == row || j % cols == col)
                .collect();
            q.sort_unstable();
            q
        })
        .collect()
}

/// `Some((p, m))` when `q = p^m` with p prime.
fn prime_power(q: usize) -> Option<(usize, u32)> {
    if q < 2 {
        return None;
    }
    let p = (2..=q).find(|&d| q.is_multiple_of(d))?;
    let (mut rest, mut m) = (q, 0);
    while rest.is_multiple_of(p) {
        rest /= p;
        m += 1;
    }
    (rest == 1).then_some((p, m))
}

/// The finite field GF(p^m). An element is a polynomial over GF(p) of degree below m, stored as
/// the number whose base-p digits are its coefficients (lowest first).
struct Field {
    p: usize,
    m: usize,
    /// The coefficients of a monic irreducible polynomial of degree m, lowest first (m + 1 of
    /// them, the last 1). Unused when m = 1.
    modulus: Vec<usize>,
}

impl Field {
    fn new(q: usize) -> Field {
        let (p, m) = prime_power(q).expect("the caller checked q is a prime power");
        let m = m as usize;
        let modulus = if m == 1 {
            vec![0, 1]
        } else {
            irreducible(p, m)
        };
        Field { p, m, modulus }
    }

    fn digits(&self, mut v: usize) -> Vec<usize> {
        let mut d = vec![0; self.m];
        for c in d.iter_mut() {
            *c = v % self.p;
            v /= self.p;
        }
        d
    }

    fn number(&self, d: &[usize]) -> usize {
        d.iter().rev().fold(0, |acc, &c| acc * self.p + c)
    }

    fn add(&self, a: usize, b: usize) -> usize {
        let (a, b) = (self.digits(a), self.digits(b));
        let s: Vec<usize> = a.iter().zip(&b).map(|(x, y)| (x + y) % self.p).collect();
        self.number(&s)
    }

    fn mul(&self, a: usize, b: usize) -> usize {
        if self.m == 1 {
            return a * b % self.p;
        }
        let (a, b) = (self.digits(a), self.digits(b));
        let mut prod = vec![0; 2 * self.m - 1];
        for (i, x) in a.iter().enumerate() {
            for (j, y) in b.iter().enumerate() {
                prod[i + j] = (prod[i + j] + x * y) % self.p;
            }
        }
        poly_rem(&mut prod, &self.modulus, self.p);
        self.number(&prod[..self.m])
    }
}

/// Reduces `a` modulo the monic polynomial `f` over GF(p), in place (coefficients lowest first).
fn poly_rem(a: &mut [usize], f: &[usize], p: usize) {
    let deg_f = f.len() - 1;
    for top in (deg_f..a.len()).rev() {
        let c = a[top];
        if c != 0 {
            for (k, &fk) in f.iter().enumerate() {
                let idx = top - deg_f + k;
                a[idx] = (a[idx] + (p - c) * fk) % p;
            }
        }
    }
}

/// The first monic irreducible polynomial of degree `m` over GF(p), by trial division.
fn irreducible(p: usize, m: usize) -> Vec<usize> {
    let monic = |deg: usize, low: usize| -> Vec<usize> {
        let mut f = Vec::with_capacity(deg + 1);
        let mut v = low;
        for _ in 0..deg {
            f.push(v % p);
            v /= p;
        }
        f.push(1);
        f
    };
    let divides = |g: &[usize], f: &[usize]| -> bool {
        let mut r = f.to_vec();
        poly_rem(&mut r, g, p);
        r[..g.len() - 1].iter().all(|&c| c == 0)
    };
    (0..p.pow(m as u32))
        .map(|low| monic(m, low))
        .find(|f| {
            (1..=m / 2).all(|deg| (0..p.pow(deg as u32)).all(|low| !divides(&monic(deg, low), f)))
        })
        .expect("an irreducible polynomial of every degree exists over every prime field")
}

/// The lines of PG(2, q), one per point, each containing its point.
fn plane(q: usize) -> Vec<Vec<usize>> {
    let f = Field::new(q);
    // Normalized representatives: first non-zero coordinate 1.
    let mut reps: Vec<[usize; 3]> = Vec::with_capacity(q * q + q + 1);
    for a in 0..q {
        for b in 0..q {
            reps.push([1, a, b]);
        }
    }
    for a in 0..q {
        reps.push([0, 1, a]);
    }
    reps.push([0, 0, 1]);
    let n = reps.len();
    let dot = |u: &[usize; 3], v: &[usize; 3]| {
        let mut s = 0;
        for k in 0..3 {
            s = f.add(s, f.mul(u[k], v[k]));
        }
        s
    };
    // points_on[l]: the points of line l (lines use the same representatives as normals).
    let points_on: Vec<Vec<usize>> = reps
        .iter()
        .map(|l| (0..n).filter(|&p| dot(&reps[p], l) == 0).collect())
        .collect();
    let mut lines_through: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (l, pts) in points_on.iter().enumerate() {
        for &p in pts {
            lines_through[p].push(l);
        }
    }
    // A perfect matching point -> line through it (Kuhn's augmenting paths).
    let mut line_owner: Vec<Option<usize>> = vec![None; n];
    for p in 0..n {
        let mut seen = vec![false; n];
        let matched = augment(p, &lines_through, &mut line_owner, &mut seen);
        debug_assert!(matched, "a regular bipartite graph has a perfect matching");
    }
    let mut line_of = vec![0; n];
    for (l, owner) in line_owner.iter().enumerate() {
        if let Some(p) = owner {
            line_of[*p] = l;
        }
    }
    (0..n).map(|p| points_on[line_of[p]].clone()).collect()
}

fn augment(
    p: usize,
    lines_through: &[Vec<usize>],
    line_owner: &mut [Option<usize>],
    seen: &mut [bool],
) -> bool {
    for &l in &lines_through[p] {
        if seen[l] {
            continue;
        }
        seen[l] = true;
        let free = match line_owner[l] {
            None => true,
            Some(other) => augment(other, lines_through, line_owner, seen),
        };
        if free {
            line_owner[l] = Some(p);
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(qs: &[Vec<usize>], n: usize, what: &str) {
        assert_eq!(qs.len(), n, "{what}: one quorum per node");
        for (i, qi) in qs.iter().enumerate() {
            assert!(
                qi.contains(&i),
                "{what} N={n}: node {i} is not in its quorum {qi:?}"
            );
            assert!(
                qi.iter().all(|&j| j < n),
                "{what} N={n}: member out of range"
            );
            for (j, qj) in qs.iter().enumerate() {
                assert!(
                    qi.iter().any(|x| qj.contains(x)),
                    "{what} N={n}: quorums of {i} {qi:?} and {j} {qj:?} do not meet"
                );
            }
        }
    }

    #[test]
    fn every_pair_of_quorums_intersects_and_every_node_is_in_its_own() {
        let mut planes = Vec::new();
        for n in 2..=64 {
            check(&quorums(n, QuorumKind::Grid).unwrap(), n, "grid");
            if plane_order(n).is_some() {
                check(&quorums(n, QuorumKind::Plane).unwrap(), n, "plane");
                planes.push(n);
            } else {
                assert!(quorums(n, QuorumKind::Plane).is_err());
            }
        }
        assert_eq!(planes, vec![7, 13, 21, 31, 57]);
    }

    #[test]
    fn plane_lines_have_q_plus_1_points_and_meet_in_exactly_one() {
        for (n, k) in [
            (7, 3),
            (13, 4),
            (21, 5),
            (31, 6),
            (57, 8),
            (73, 9),
            (91, 10),
        ] {
            let qs = quorums(n, QuorumKind::Plane).unwrap();
            assert!(
                qs.iter().all(|q| q.len() == k),
                "N={n}: lines of {k} points"
            );
            for a in 0..n {
                for b in a + 1..n {
                    let common = qs[a].iter().filter(|x| qs[b].contains(x)).count();
                    assert_eq!(common, 1, "N={n}: lines {a} and {b}");
                }
            }
            check(&qs, n, "plane");
        }
    }

    #[test]
    fn grid_quorums_are_rows_and_columns() {
        // 9 nodes: a 3x3 grid, K = 2*3 - 1 = 5.
        let qs = quorums(9, QuorumKind::Grid).unwrap();
        assert_eq!(qs[4], vec![1, 3, 4, 5, 7]);
        assert!(qs.iter().all(|q| q.len() == 5));
        // 10 nodes: 4 columns, rows [0..4), [4..8), [8, 9].
        let qs = quorums(10, QuorumKind::Grid).unwrap();
        assert_eq!(qs[9], vec![1, 5, 8, 9]);
    }

    #[test]
    fn gf4_and_gf8_are_fields() {
        for q in [4, 8, 9, 16, 25, 27] {
            let f = Field::new(q);
            for a in 1..q {
                // Every non-zero element has an inverse, and multiplication distributes.
                assert!(
                    (1..q).any(|b| f.mul(a, b) == 1),
                    "GF({q}): {a} has no inverse"
                );
                for b in 0..q {
                    for c in [0, 1, q - 1] {
                        assert_eq!(
                            f.mul(a, f.add(b, c)),
                            f.add(f.mul(a, b), f.mul(a, c)),
                            "GF({q})"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn parameters_select_the_construction_and_bad_choices_name_the_field() {
        let peers = Peers::range(7);
        let plane = for_params(&peers, &Params::default()).unwrap();
        assert!(
            plane.iter().all(|q| q.len() == 3),
            "N=7 defaults to the plane"
        );
        let grid = for_params(
            &peers,
            &Params {
                quorums: Some(QuorumKind::Grid),
                ..Params::default()
            },
        )
        .unwrap();
        assert_eq!(
            grid[0],
            vec![NodeId(0), NodeId(1), NodeId(2), NodeId(3), NodeId(6)]
        );
        let err = for_params(
            &Peers::range(8),
            &Params {
                quorums: Some(QuorumKind::Plane),
                ..Params::default()
            },
        )
        .unwrap_err();
        assert_eq!(err.field, "quorums");
        assert!(err.message.contains("8 nodes"), "{}", err.message);
        // Ids map through the membership order.
        let odd = Peers::new([10, 20, 30].map(NodeId).to_vec()).unwrap();
        let qs = for_params(&odd, &Params::default()).unwrap();
        assert_eq!(qs[2], vec![NodeId(10), NodeId(30)]);
    }
}
