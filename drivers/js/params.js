'use strict';
// The parameter table (docs/lifecycle.md "Parameters"): name -> [kind, default, lo, hi],
// generated from reference/ostrom/protocol/params.py by `ostrom docs` (make generate).  `reset`
// applies the vector's `params` over these defaults with the same checks as
// Params.from_mapping: unknown keys, types (an integer parameter refuses 5.0, a float one
// takes 5, a word one a string), ranges (a word's: the words in place of lo), relations.

const { isDict } = require('./pyjson');

const INF = null; // no upper bound
const TABLE = {
// BEGIN generated: params
  reviewers: ['int', 5, 1, 1000],
  quorum: ['int', 3, 1, 1000],
  T_fast: ['int', 3, 1, 10000],
  T_delib: ['int', 5, 1, 10000],
  T_commit: ['int', 2, 1, 10000],
  T_reveal: ['int', 2, 1, 10000],
  T_arb: ['int', 5, 1, 10000],
  tau_accept: ['float', 0.6, 0, 1],
  tau_reject: ['float', 0.4, 0, 1],
  tally_min_side: ['int', 2, 1, 1000],
  dispute_reviewers: ['int', 7, 1, 1000],
  q_dispute: ['int', 5, 1, 1000],
  tau_retract: ['float', 0.67, 0, 1],
  max_disputes: ['int', 2, 0, 1000],
  dispute_rate: ['int', 1, 0, 1000],
  urgent_penalty: ['float', 3.0, 1, 100],
  max_resubmit: ['int', 2, 0, 1000],
  cooldown: ['int', 20, 0, 100000],
  r_resubmit: ['float', 0.5, 0, 1],
  propose_rate: ['int', 2, 1, 1000],
  propose_rate_limited: ['int', 1, 0, 1000],
  delta: ['float', 0.01, 0, 1],
  eigentrust_a: ['float', 0.15, 0, 1],
  w_min: ['float', 0.1, 0, 1],
  w_max: ['float', 1.0, 0, 100],
  farm_window: ['int', 10, 1, 100000],
  farm_gain: ['float', 0.1, 0, 100],
  tier1_rep: ['float', 0.55, 0, 1],
  tier1_rounds: ['int', 10, 0, 100000],
  tier2_rep: ['float', 0.7, 0, 1],
  tier3_rep: ['float', 0.85, 0, 1],
  sanction_window: ['int', 50, 1, 100000],
  sigma1: ['int', 3, 1, 1000],
  sigma2: ['int', 5, 1, 1000],
  sigma3: ['int', 8, 1, 1000],
  sigma4: ['int', 12, 1, 1000],
  T_susp: ['int', 50, 1, 100000],
  T_quarantine: ['int', 50, 1, 100000],
  omega_D: ['float', 0.5, 0, 1],
  omega_R: ['float', 0.5, 0, 1],
  theta: ['float', 0.3, 0, 1],
  decay_scales: ['floats', [10.0, 100.0, 1000.0], 0, INF],
  decay_weights: ['floats', [0.5, 0.3, 0.2], 0, 1],
  alpha: ['float', 0.5, 0, 1],
  min_active_agents: ['int', 12, 1, 1000000],
  checkpoint_k: ['int', 16, 1, 1000000],
  watermark_window: ['int', 32, 1, 1000000],
  content_limit: ['int', 65536, 0, 16777216],
  refused_row_bytes: ['int', 8192, 1024, 16777216],
  embedding_dim: ['int', 0, 0, 4096],
  join_mode: ['str', 'open', ['open', 'pow', 'invite'], INF],
  join_pow_bits: ['int', 20, 0, 64],
  seed: ['int', 0, 0, INF],
// END generated: params
};

const isNum = (v) => typeof v === 'bigint' || typeof v === 'number';

/** The parameters of a `reset`; throws Error naming every problem. Integers come back as
 *  BigInt (the JSON reader's integers), floats as Number. */
function buildParams(given) {
  if (!isDict(given)) throw new Error('params must be an object');
  const problems = [];
  const unknown = Object.keys(given).filter((k) => !(k in TABLE)).sort();
  if (unknown.length) problems.push(`unknown parameter(s): ${unknown.join(', ')}`);
  const p = {};
  for (const [name, [kind, def]] of Object.entries(TABLE)) {
    p[name] = kind === 'int' ? BigInt(def) : kind === 'float' || kind === 'str' ? def : def.slice();
  }
  for (const [name, value] of Object.entries(given)) {
    if (!(name in TABLE)) continue;
    const kind = TABLE[name][0];
    if (kind === 'int') {
      if (typeof value === 'bigint') p[name] = value;
      else problems.push(`${name}: expected an integer`);
    } else if (kind === 'float') {
      if (isNum(value)) p[name] = Number(value);
      else problems.push(`${name}: expected a number`);
    } else if (kind === 'str') {
      if (typeof value === 'string') p[name] = value;
      else problems.push(`${name}: expected a word`);
    } else if (Array.isArray(value) && value.every(isNum)) {
      p[name] = value.map(Number);
    } else {
      problems.push(`${name}: expected a list of numbers`);
    }
  }
  if (problems.length) throw new Error(problems.join('; '));
  for (const [name, [kind, , lo, hi]] of Object.entries(TABLE)) {
    if (kind === 'str') { // a word: lo holds the words it may take
      if (!lo.includes(p[name])) problems.push(`${name} is not one of ${lo.join(', ')}`);
      continue;
    }
    const vs = Array.isArray(p[name]) ? p[name] : [p[name]];
    for (const v of vs) {
      // NaN passes Python's range check but breaks micro(); refuse it here.
      if (Number.isNaN(v) || v < lo || (hi !== INF && v > hi)) {
        problems.push(`${name} outside [${lo}, ${hi === INF ? '∞' : hi}]`);
        break;
      }
    }
  }
  const rel = (bad, msg) => bad && problems.push(msg);
  rel(p.tau_reject >= p.tau_accept, 'tau_reject must be below tau_accept');
  rel(p.quorum > p.reviewers, 'quorum exceeds reviewers');
  rel(p.q_dispute > p.dispute_reviewers, 'q_dispute exceeds dispute_reviewers');
  rel(p.tally_min_side > p.quorum, 'tally_min_side exceeds quorum');
  rel(p.tally_min_side > p.q_dispute, 'tally_min_side exceeds q_dispute');
  rel(p.w_min > p.w_max, 'w_min exceeds w_max');
  rel(!(p.tier1_rep <= p.tier2_rep && p.tier2_rep <= p.tier3_rep), 'tier thresholds must be non-decreasing');
  rel(!(p.sigma1 < p.sigma2 && p.sigma2 < p.sigma3 && p.sigma3 < p.sigma4), 'sanction levels must rise strictly');
  rel(p.propose_rate_limited > p.propose_rate, 'propose_rate_limited exceeds propose_rate');
  rel(p.decay_scales.length !== p.decay_weights.length, 'decay_scales and decay_weights differ in length');
  if (problems.length) throw new Error(problems.join('; '));
  return p;
}

module.exports = { buildParams, TABLE };
