'use strict';
// The lifecycle orchestrator, written from docs/rules.md and docs/lifecycle.md.
//
// A command is handled in two phases, as rules.md requires: the ordered checks (each throws
// Refused with the first failing code, before anything is mutated), then the mutation.
// State changes go through one function, fire(), which looks the transition up in the table
// of docs/lifecycle.md: nothing else assigns an artifact's state.
//
// Numbers: weights, shares and confidences enter as micro-units, round(x * 10^6) with
// Python's round-half-even, held as BigInt; tallies, forget scores and quorums are BigInt
// products, so nothing is lost above 2^53.

const crypto = require('crypto');
const { isDict } = require('./pyjson');

// --- the transition table (docs/lifecycle.md): [event, from, to, verdict] ---------------
const ROWS = [
  ['propose', 'new', 'proposed', null],
  ['resubmit', 'rejected', 'proposed', null],
  ['resubmit', 'expired', 'proposed', null],
  ['resubmit', 'retracted', 'proposed', null],
  ['recruit', 'proposed', 'fast_track', 'fast'],
  ['recruit', 'proposed', 'deliberation', 'formal'],
  ['object', 'fast_track', 'deliberation', null],
  ['timeout', 'fast_track', 'active', null],
  ['timeout', 'deliberation', 'commit', null],
  ['commit_vote', 'commit', 'commit', null],
  ['timeout', 'commit', 'reveal', null],
  ['reveal_vote', 'reveal', 'reveal', null],
  ['timeout', 'reveal', 'active', 'accept'],
  ['timeout', 'reveal', 'rejected', 'reject'],
  ['timeout', 'reveal', 'arbitration', 'undecided'],
  ['timeout', 'reveal', 'commit', 'rerecruit'],
  ['timeout', 'reveal', 'expired', 'expire'],
  ['arbitrate', 'arbitration', 'active', 'accept'],
  ['arbitrate', 'arbitration', 'rejected', 'reject'],
  ['arbitrate', 'arbitration', 'commit', 'revote'],
  ['timeout', 'arbitration', 'rejected', null],
  ['dispute', 'active', 'disputed', null],
  ['urgent_report', 'active', 'disputed', null],
  ['commit_vote', 'disputed', 'disputed', null],
  ['reveal_vote', 'disputed', 'disputed', null],
  ['timeout', 'disputed', 'disputed', 'reveal_phase'],
  ['timeout', 'disputed', 'retracted', 'retract'],
  ['timeout', 'disputed', 'active', 'keep'],
  ['timeout', 'disputed', 'superseded', 'keep_superseded'],
  ['supersede', 'active', 'superseded', null],
  ...['active', 'disputed', 'superseded', 'rejected', 'expired', 'retracted'].map((s) => ['forget_vote', s, s, null]),
  ...['active', 'superseded', 'rejected', 'expired', 'retracted'].map((s) => ['forget', s, 'forgotten', null]),
];
const TABLE = new Map(ROWS.map(([e, f, t, v]) => [`${e}|${f}|${v}`, t]));

const STABLE = new Set(['active', 'superseded', 'rejected', 'expired', 'retracted', 'forgotten']);
const RESUBMITTABLE = new Set(['rejected', 'expired', 'retracted']);
const FORGETTABLE = new Set(['active', 'superseded', 'rejected', 'expired', 'retracted']);
const FORGET_VOTABLE = new Set([...FORGETTABLE, 'disputed']);
const BARRING = new Set(['suspended', 'banned', 'quarantined']);
const SANCTIONS = new Set(['none', 'warned', 'rate_limited', ...BARRING]);
const VOTES = { review: ['accept', 'reject'], dispute: ['retract', 'keep'] };
const ALL_VOTES = new Set(['accept', 'reject', 'retract', 'keep']);
const OUTCOMES = new Set(['accept', 'reject', 'revote']);
// Commands sent by an agent and the event's min_tier (docs/lifecycle.md "Who may do what").
const MIN_TIER = {
  propose: 0, resubmit: 0, object: 1, commit_vote: 1, reveal_vote: 1,
  arbitrate: 3, dispute: 2, urgent_report: 1, forget_vote: 0,
};
const M = 1000000n;

// --- values ------------------------------------------------------------------------------

/** round(x * 10^6) as Python computes it (the float product, then round half to even). */
function micro(x) {
  if (typeof x === 'bigint') return x * M;
  const p = x * 1e6;
  if (!Number.isFinite(p)) return p > 0 ? 10n ** 400n : -(10n ** 400n); // out of every range
  const f = Math.floor(p);
  const d = p - f; // exact for doubles
  const r = d > 0.5 || (d === 0.5 && f % 2 !== 0) ? f + 1 : f;
  return BigInt(r);
}

/** Python's string order (by code point), not JS's (by UTF-16 unit). */
function cmpStr(a, b) {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      // surrogates (astral code points) sort above U+E000..U+FFFF
      if (x >= 0xd800 && y >= 0xd800) {
        x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
        y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
      }
      return x < y ? -1 : 1;
    }
  }
  return a.length - b.length;
}
const sorted = (xs) => [...xs].sort(cmpStr);

const TWO64 = 1n << 64n;
const SORTITION_DRAWS_PER_SEAT = 64; // voting.SORTITION_DRAWS_PER_SEAT
const sha256 = (s) => crypto.createHash('sha256').update(s, 'utf8').digest('hex');

/** The canonical encoding of a vote (rules.md): the six keys sorted, no spaces, UTF-8. */
function canonical(voter, artifact, round, vote, reason, salt) {
  const s = JSON.stringify;
  return `{"artifact":${s(artifact)},"reason":${s(reason)},"round":${round},"salt":${s(salt)},"vote":${s(vote)},"voter":${s(voter)}}`;
}
/**
 * The sortition of voting.select_reviewers (docs/rules.md, `recruit`), step for step:
 * `k` reviewers from `eligible` (sorted by code point) minus the Set `excluded`, in draw
 * order. Draw j reads the first 8 bytes of sha256("<seed>|<artifact>|<round>|<j>") as an
 * unsigned big-endian integer x; x >= 2^64 - (2^64 mod n) is rejected, else the index is
 * x mod n. Excluded or already drawn agents are skipped; after 64·k draws the rest are the
 * first candidates not yet drawn, in eligible order.
 */
function selectReviewers(seed, artifact, round, eligible, excluded, k) {
  const seats = Math.max(0, Number(k));
  if (seats === 0) return [];
  const cands = eligible.filter((a) => !excluded.has(a));
  if (cands.length <= seats) return cands;
  const N = BigInt(eligible.length);
  const limit = TWO64 - (TWO64 % N);
  const drawn = [];
  const seen = new Set();
  for (let j = 0; j < SORTITION_DRAWS_PER_SEAT * seats; j++) {
    const x = BigInt(`0x${sha256(`${seed}|${artifact}|${round}|${j}`).slice(0, 16)}`);
    if (x >= limit) continue;
    const a = eligible[Number(x % N)];
    if (excluded.has(a) || seen.has(a)) continue;
    drawn.push(a);
    seen.add(a);
    if (drawn.length === seats) return drawn;
  }
  for (const a of cands) {
    if (drawn.length === seats) break;
    if (!seen.has(a)) drawn.push(a);
  }
  return drawn;
}

const commitment = (...args) => sha256(canonical(...args));

// --- check 1: field types --------------------------------------------------------------------

const isText = (v) => typeof v === 'string' && v.isWellFormed();
const isId = (v) => isText(v) && v !== '';
const isNumber = (v) => typeof v === 'bigint' || (typeof v === 'number' && Number.isFinite(v));
const isUnit = (v) => isNumber(v) && v >= 0 && v <= 1;
const isIdList = (v) => Array.isArray(v) && v.every(isId);
const isTier = (v) => typeof v === 'bigint' && v >= 0n && v <= 3n;
const isHex64 = (v) => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v);
const oneOf = (set) => (v) => typeof v === 'string' && set.has(v);

const isBoundedText = (lo, hi) => (v) => isText(v) && lo <= [...v].length && [...v].length <= hi;
// One check per field type of reference/ostrom/protocol/commands.py (FieldType.name); the
// generated SCHEMAS below name them.  Lengths count code points, as Python's len does.
const T = {
  text: isText,
  id: isId,
  hex64: isHex64,
  number: isNumber,
  unit: isUnit,
  tier: isTier,
  id_list: isIdList,
  vote: oneOf(ALL_VOTES),
  outcome: oneOf(OUTCOMES),
  sanction: oneOf(SANCTIONS),
  content: isText,
  title: (v) => isBoundedText(0, BOUNDS.title)(v),
  tags: (v) => Array.isArray(v) && v.length <= BOUNDS.tags && v.every(isBoundedText(1, BOUNDS.tag)),
  source: (v) => isBoundedText(0, BOUNDS.source)(v),
  embedding: (v) =>
    Array.isArray(v) &&
    v.length >= 1 &&
    v.length <= BOUNDS.embedding &&
    v.every((x) => isNumber(x) && (typeof x === 'bigint' ? x < 0n ? -x : x : Math.abs(x)) <= BOUNDS.number),
};
// BEGIN generated: commands
const PAYLOAD_FIELDS = ['content', 'title', 'tags', 'source', 'embedding'];
const BOUNDS = { title: 256, tag: 64, tags: 32, source: 2048, embedding: 4096, number: 1e+09 };
const SCHEMAS = {
  propose: [{ agent: T.id, artifact: T.id, slot: T.id, digest: T.id }, { evidence: T.id_list, content: T.content, title: T.title, tags: T.tags, source: T.source, embedding: T.embedding }],
  resubmit: [{ agent: T.id, artifact: T.id, digest: T.id }, { evidence: T.id_list, content: T.content, title: T.title, tags: T.tags, source: T.source, embedding: T.embedding }],
  recruit: [{ artifact: T.id }, {}],
  object: [{ agent: T.id, artifact: T.id }, {}],
  commit_vote: [{ agent: T.id, artifact: T.id, commitment: T.hex64 }, {}],
  reveal_vote: [{ agent: T.id, artifact: T.id, vote: T.vote, reason: T.text, salt: T.hex64 }, {}],
  arbitrate: [{ agent: T.id, artifact: T.id, outcome: T.outcome }, {}],
  dispute: [{ agent: T.id, artifact: T.id, reason: T.text }, {}],
  urgent_report: [{ agent: T.id, artifact: T.id, reason: T.text }, {}],
  forget_vote: [{ agent: T.id, artifact: T.id }, { confidence: T.unit }],
  tick: [{}, {}],
  set_agent: [{ agent: T.id, tier: T.tier }, { weight: T.number, reputation: T.unit, sanction: T.sanction, subscriptions: T.id_list }],
};
// END generated: commands

class Refused extends Error {
  constructor(code, events = []) {
    super(code);
    this.code = code;
    this.events = events;
  }
}
const refuse = (code, events) => {
  throw new Refused(code, events);
};
const violation = (agent, kind) => ({ event: 'violation', agent, kind });

/**
 * A float as Python's repr writes it (json.dumps does): the shortest digits that round-trip
 * (toExponential gives them), in fixed notation with at least one decimal when the decimal
 * point falls within -4 < decpt <= 16, else d.ddde±XX with at least two exponent digits.
 */
function pyFloat(x) {
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mant, exp] = x.toExponential().split('e');
  const sign = mant.startsWith('-') ? '-' : '';
  const digits = mant.replace('-', '').replace('.', '');
  const decpt = Number(exp) + 1;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) return `${sign}0.${'0'.repeat(-decpt)}${digits}`;
    if (decpt >= digits.length) return `${sign}${digits}${'0'.repeat(decpt - digits.length)}.0`;
    return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
  }
  const e = decpt - 1;
  const frac = digits.length > 1 ? `.${digits.slice(1)}` : '';
  return `${sign}${digits[0]}${frac}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
}

/** A payload value as Python's json.dumps(ensure_ascii=False) writes it. */
function pyValue(v) {
  if (typeof v === 'string') return JSON.stringify(v); // the same escapes as Python's
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return pyFloat(v);
  return `[${v.map(pyValue).join(',')}]`;
}

/**
 * commands.payload_digest: sha256 of the payload's canonical JSON (sorted keys, compact,
 * UTF-8; strings, integers and floats spelled as Python's json.dumps(ensure_ascii=False)).
 */
function payloadDigest(cmd, fields) {
  const body = [...fields].sort(cmpStr).map((k) => `${JSON.stringify(k)}:${pyValue(cmd[k])}`);
  return sha256(`{${body.join(',')}}`);
}

/** Check 1 of rules.md: a known op, exactly its fields, each of the right type. */
function parseCommand(cmd) {
  if (!isDict(cmd)) refuse('invalid_input');
  const op = cmd.op;
  if (typeof op !== 'string' || !Object.hasOwn(SCHEMAS, op)) refuse('invalid_input');
  const [required, optional] = SCHEMAS[op];
  for (const [k, v] of Object.entries(cmd)) {
    if (k === 'op') continue;
    const check = Object.hasOwn(required, k) ? required[k] : Object.hasOwn(optional, k) ? optional[k] : null;
    if (check === null || !check(v)) refuse('invalid_input');
  }
  for (const k of Object.keys(required)) if (!Object.hasOwn(cmd, k)) refuse('invalid_input');
  const payload = PAYLOAD_FIELDS.filter((k) => Object.hasOwn(cmd, k));
  if (payload.length > 0 && cmd.digest !== payloadDigest(cmd, payload)) refuse('invalid_input');
  return op;
}

// --- the orchestrator ------------------------------------------------------------------------

class Lifecycle {
  constructor(params) {
    this.p = params;
    this.agents = new Map(); // id -> {tier, weight, reputation, sanction, subs}
    this.arts = new Map(); // id -> artifact, in creation order
    this.now = 0;
    this.proposals = new Map(); // per-round counts
    this.disputes = new Map();
    this.tauAccept = micro(params.tau_accept);
    this.tauReject = micro(params.tau_reject);
    this.tauRetract = micro(params.tau_retract);
    this.wMin = micro(params.w_min);
    this.wMax = micro(params.w_max);
  }


  apply(cmd) {
    let op;
    try {
      op = parseCommand(cmd);
    } catch (e) {
      if (!(e instanceof Refused)) throw e;
      return { result: e.code, events: this.malformed(cmd) };
    }
    try {
      return { result: 'ok', events: this['op_' + op](cmd) };
    } catch (e) {
      if (!(e instanceof Refused)) throw e;
      return { result: e.code, events: e.events };
    }
  }

  /** A command of a registered agent that fails check 1 is its `malformed` violation. */
  malformed(cmd) {
    if (!isDict(cmd) || typeof cmd.op !== 'string' || !Object.hasOwn(MIN_TIER, cmd.op)) return [];
    const a = cmd.agent;
    return typeof a === 'string' && this.agents.has(a) ? [violation(a, 'malformed')] : [];
  }

  // --- helpers ---

  /** Checks 2-5 (the tier part of 5); the role part is each op's. */
  actor(agentId, op, artId) {
    const a = this.agents.get(agentId);
    if (!a) refuse('unknown_agent');
    let art = null;
    if (artId !== null) {
      art = this.arts.get(artId);
      if (!art) refuse('unknown_artifact');
    }
    if (BARRING.has(a.sanction)) refuse('sanctioned');
    if (a.tier < MIN_TIER[op]) refuse('not_eligible');
    return [a, art];
  }

  weight(id) {
    const a = this.agents.get(id);
    return a.tier === 0 ? this.wMin : micro(a.weight);
  }

  eligible() {
    return sorted([...this.agents.values()].filter((a) => a.tier >= 1 && !BARRING.has(a.sanction)).map((a) => a.id));
  }

  select(artId, round, excluded, k) {
    return selectReviewers(this.p.seed, artId, round, this.eligible(), excluded, k);
  }

  activeIn(slot) {
    return [...this.arts.values()].filter((a) => a.state === 'active' && a.slot === slot);
  }

  fire(art, event, verdict = null, timer = null) {
    const from = art.state;
    const to = TABLE.get(`${event}|${from}|${verdict}`);
    if (to === undefined) throw new Error(`no row ${event}/${verdict} from ${from} for ${art.id}`);
    art.state = to;
    if (from !== to && STABLE.has(to)) {
      art.stableSince = this.now;
      art.deadline = null;
    }
    if (timer !== null) art.deadline = this.now + Number(timer);
    const ev = { event, artifact: art.id, from, to };
    if (verdict !== null) ev.verdict = verdict;
    return ev;
  }

  openBallot(art, kind, reviewers, round) {
    art.round = round;
    art.reviewers = new Set(reviewers);
    art.ballot = { kind, round, phase: 'commit', commitments: new Map(), reveals: new Map() };
  }

  /** Enter `active` by a decision, then supersede the slot's other active artifacts. */
  activate(art, event, verdict) {
    const others = this.activeIn(art.slot);
    return [this.fire(art, event, verdict), ...others.map((o) => this.fire(o, 'supersede'))];
  }

  proposeLimit(a) {
    return a.sanction === 'rate_limited' ? this.p.propose_rate_limited : this.p.propose_rate;
  }

  // --- agent commands ---

  op_propose(c) {
    const [a] = this.actor(c.agent, 'propose', null);
    if (this.arts.has(c.artifact)) refuse('duplicate');
    if (BigInt(this.proposals.get(c.agent) ?? 0) >= this.proposeLimit(a)) {
      refuse('rate_limited', [violation(c.agent, 'rate_limited')]);
    }
    this.proposals.set(c.agent, (this.proposals.get(c.agent) ?? 0) + 1);
    this.arts.set(c.artifact, {
      id: c.artifact, slot: c.slot, submitter: c.agent, digest: c.digest,
      evidence: [...(c.evidence ?? [])], state: 'proposed', hidden: false,
      disputeCount: 0, resubmitCount: 0, deadline: null, stableSince: 0, decision: null,
      round: 0, reviewers: new Set(), reviewReviewers: new Set(), rerecruited: false,
      revoted: false, ballot: null, urgentReporter: null, disputer: null,
      forgetVotes: new Map(), tombstone: null,
    });
    return [{ event: 'propose', artifact: c.artifact, from: 'new', to: 'proposed' }];
  }

  op_recruit(c) {
    const art = this.arts.get(c.artifact);
    if (!art) refuse('unknown_artifact');
    if (art.state !== 'proposed') refuse('wrong_phase');
    return this.recruit(art);
  }

  recruit(art) {
    const sub = this.agents.get(art.submitter);
    const fast = sub !== undefined && sub.tier >= 1 && this.activeIn(art.slot).length === 0 && art.resubmitCount === 0;
    const round = art.round + 1;
    art.round = round;
    art.reviewers = new Set(this.select(art.id, round, new Set([art.submitter]), this.p.reviewers));
    art.reviewReviewers = new Set(art.reviewers);
    art.ballot = null;
    return fast
      ? [this.fire(art, 'recruit', 'fast', this.p.T_fast)]
      : [this.fire(art, 'recruit', 'formal', this.p.T_delib)];
  }

  op_object(c) {
    const [a, art] = this.actor(c.agent, 'object', c.artifact);
    const role = art.reviewers.has(c.agent) || a.subs.has(art.slot);
    if (!role || c.agent === art.submitter) refuse('not_eligible');
    if (art.state !== 'fast_track') refuse('wrong_phase');
    return [this.fire(art, 'object', null, this.p.T_delib)];
  }

  op_commit_vote(c) {
    const [, art] = this.actor(c.agent, 'commit_vote', c.artifact);
    if (!art.reviewers.has(c.agent)) refuse('not_eligible');
    const b = art.ballot;
    if (!b || b.phase !== 'commit' || !(art.state === 'commit' || art.state === 'disputed')) refuse('wrong_phase');
    if (b.commitments.has(c.agent)) refuse('duplicate');
    b.commitments.set(c.agent, c.commitment);
    return [this.fire(art, 'commit_vote')];
  }

  op_reveal_vote(c) {
    const [, art] = this.actor(c.agent, 'reveal_vote', c.artifact);
    const b = art.ballot;
    if (!b || !b.commitments.has(c.agent)) refuse('not_eligible');
    if (b.phase !== 'reveal' || !(art.state === 'reveal' || art.state === 'disputed')) refuse('wrong_phase');
    if (b.reveals.has(c.agent)) refuse('duplicate');
    const opens = b.commitments.get(c.agent) === commitment(c.agent, c.artifact, b.round, c.vote, c.reason, c.salt);
    if (!VOTES[b.kind].includes(c.vote) || !opens) refuse('bad_reveal', [violation(c.agent, 'bad_reveal')]);
    b.reveals.set(c.agent, { vote: c.vote, reason: c.reason });
    return [this.fire(art, 'reveal_vote')];
  }

  op_arbitrate(c) {
    const [, art] = this.actor(c.agent, 'arbitrate', c.artifact);
    if (c.agent === art.submitter || art.reviewers.has(c.agent)) refuse('not_eligible');
    if (art.state !== 'arbitration') refuse('wrong_phase');
    if (c.outcome === 'revote' && art.revoted) refuse('limit_reached');
    const prior = art.decision && 'tally' in art.decision ? art.decision.tally : null;
    if (c.outcome === 'revote') {
      art.revoted = true;
      this.openBallot(art, 'review', art.reviewers, art.round + 1);
      return [this.fire(art, 'arbitrate', 'revote', this.p.T_commit)];
    }
    art.decision = { path: 'arbiter', verdict: c.outcome, arbiter: c.agent, tally: prior };
    if (c.outcome === 'accept') return this.activate(art, 'arbitrate', 'accept');
    return [this.fire(art, 'arbitrate', 'reject')];
  }

  op_dispute(c) {
    return this.openDispute(c, 'dispute');
  }

  op_urgent_report(c) {
    return this.openDispute(c, 'urgent_report');
  }

  openDispute(c, event) {
    const [, art] = this.actor(c.agent, event, c.artifact);
    if (art.state !== 'active') refuse('wrong_phase');
    if (BigInt(art.disputeCount) >= this.p.max_disputes) refuse('limit_reached');
    if (BigInt(this.disputes.get(c.agent) ?? 0) >= this.p.dispute_rate) {
      refuse('rate_limited', [violation(c.agent, 'rate_limited')]);
    }
    art.disputeCount += 1;
    this.disputes.set(c.agent, (this.disputes.get(c.agent) ?? 0) + 1);
    const excluded = new Set([...art.reviewers, art.submitter, c.agent]);
    const round = art.round + 1;
    this.openBallot(art, 'dispute', this.select(art.id, round, excluded, this.p.dispute_reviewers), round);
    if (event === 'urgent_report') {
      art.hidden = true;
      art.urgentReporter = c.agent;
    } else {
      art.disputer = c.agent;
    }
    return [this.fire(art, event, null, this.p.T_commit)];
  }

  op_resubmit(c) {
    const [a, art] = this.actor(c.agent, 'resubmit', c.artifact);
    if (c.agent !== art.submitter || micro(a.reputation) < micro(this.p.r_resubmit)) refuse('not_eligible');
    if (!RESUBMITTABLE.has(art.state)) refuse('wrong_phase');
    if (BigInt(art.resubmitCount) >= this.p.max_resubmit) refuse('limit_reached');
    if (BigInt(this.now) < BigInt(art.stableSince) + this.p.cooldown) refuse('cooldown');
    const evidence = c.evidence ?? [];
    const old = new Set(art.evidence ?? []);
    if (c.digest === art.digest && evidence.every((e) => old.has(e))) refuse('duplicate');
    if (BigInt(this.proposals.get(c.agent) ?? 0) >= this.proposeLimit(a)) {
      refuse('rate_limited', [violation(c.agent, 'rate_limited')]);
    }
    this.proposals.set(c.agent, (this.proposals.get(c.agent) ?? 0) + 1);
    Object.assign(art, {
      digest: c.digest, evidence: [...evidence], resubmitCount: art.resubmitCount + 1,
      reviewers: new Set(), reviewReviewers: new Set(), rerecruited: false, revoted: false,
      ballot: null, decision: null, hidden: false, urgentReporter: null, forgetVotes: new Map(),
    });
    return [this.fire(art, 'resubmit')];
  }

  op_forget_vote(c) {
    const [, art] = this.actor(c.agent, 'forget_vote', c.artifact);
    if (!FORGET_VOTABLE.has(art.state)) refuse('wrong_phase');
    if (art.forgetVotes.has(c.agent)) refuse('duplicate');
    art.forgetVotes.set(c.agent, micro(c.confidence ?? 1.0));
    return [this.fire(art, 'forget_vote')];
  }

  op_set_agent(c) {
    if (c.weight !== undefined) {
      const w = micro(c.weight);
      if (w < this.wMin || w > this.wMax) refuse('invalid_input');
    }
    // fields left out keep their value; a new agent starts at w_min, reputation 0, no sanction
    const old = this.agents.get(c.agent);
    const keep = (k, def) => (c[k] !== undefined ? c[k] : old ? old[k] : def);
    this.agents.set(c.agent, {
      id: c.agent,
      tier: Number(c.tier),
      weight: Number(keep('weight', this.p.w_min)),
      reputation: Number(keep('reputation', 0)),
      sanction: keep('sanction', 'none'),
      subs: c.subscriptions !== undefined ? new Set(c.subscriptions) : old ? old.subs : new Set(),
    });
    return [];
  }

  // --- time ---

  op_tick() {
    const events = [];
    for (const art of this.arts.values()) if (art.state === 'proposed') events.push(...this.recruit(art));
    this.now += 1;
    this.proposals.clear();
    this.disputes.clear();
    const due = [...this.arts.values()].filter((a) => a.deadline !== null && a.deadline <= this.now);
    for (const art of due) events.push(...this.timeout(art));
    events.push(...this.forgetDue());
    return events;
  }

  timeout(art) {
    const p = this.p;
    art.deadline = null;
    const b = art.ballot;
    switch (art.state) {
      case 'fast_track':
        art.decision = { path: 'fast_track', verdict: 'accept' };
        return this.activate(art, 'timeout', null);
      case 'deliberation':
        this.openBallot(art, 'review', art.reviewers, art.round);
        return [this.fire(art, 'timeout', null, p.T_commit)];
      case 'commit':
        b.phase = 'reveal';
        return [this.fire(art, 'timeout', null, p.T_reveal)];
      case 'reveal':
        return [...this.closeReview(art, b), ...this.nonReveals(b)];
      case 'arbitration':
        art.decision = {
          path: 'arbitration_timeout', verdict: 'reject',
          tally: art.decision && 'tally' in art.decision ? art.decision.tally : null,
        };
        return [this.fire(art, 'timeout')];
      case 'disputed':
        if (b.phase === 'commit') {
          b.phase = 'reveal';
          return [this.fire(art, 'timeout', 'reveal_phase', p.T_reveal)];
        }
        try {
          return [...this.closeDispute(art, b), ...this.nonReveals(b)];
        } finally {
          art.disputer = null;
        }
      default:
        throw new Error(`timeout in ${art.state}`);
    }
  }

  nonReveals(b) {
    return sorted([...b.commitments.keys()].filter((v) => !b.reveals.has(v))).map((v) => violation(v, 'non_reveal'));
  }

  tally(b) {
    const t = { yes: 0n, no: 0n, yesVoters: 0, noVoters: 0 };
    for (const [voter, r] of b.reveals) {
      if (r.vote === VOTES[b.kind][0]) {
        t.yes += this.weight(voter);
        t.yesVoters += 1;
      } else {
        t.no += this.weight(voter);
        t.noVoters += 1;
      }
    }
    const [y, n] = VOTES[b.kind];
    t.record = {
      [y]: t.yes, [n]: t.no, reveals: t.yesVoters + t.noVoters,
      [`${y}_voters`]: t.yesVoters, [`${n}_voters`]: t.noVoters,
    };
    return t;
  }

  closeReview(art, b) {
    const p = this.p;
    const t = this.tally(b);
    const side = p.tally_min_side;
    const total = t.yes + t.no;
    let verdict;
    if (BigInt(t.yesVoters + t.noVoters) < p.quorum) verdict = 'no_quorum';
    else if (t.yes * M >= this.tauAccept * total && BigInt(t.yesVoters) >= side) verdict = 'accept';
    else if (t.yes * M <= this.tauReject * total && BigInt(t.noVoters) >= side) verdict = 'reject';
    else verdict = 'undecided';
    b.phase = 'closed';
    const record = { path: 'tally', verdict, tally: t.record };
    if (verdict === 'accept') {
      art.decision = record;
      return this.activate(art, 'timeout', 'accept');
    }
    if (verdict === 'reject') {
      art.decision = record;
      return [this.fire(art, 'timeout', 'reject')];
    }
    if (verdict === 'undecided') {
      art.decision = record;
      return [this.fire(art, 'timeout', 'undecided', p.T_arb)];
    }
    if (!art.rerecruited) {
      art.rerecruited = true;
      const round = art.round + 1;
      const seen = new Set([...art.reviewReviewers, art.submitter]);
      const fresh = this.select(art.id, round, seen, p.reviewers);
      this.openBallot(art, 'review', fresh, round);
      art.reviewReviewers = new Set([...art.reviewReviewers, ...art.reviewers]);
      return [this.fire(art, 'timeout', 'rerecruit', p.T_commit)];
    }
    art.decision = { path: 'quorum_missed', verdict: 'expire', tally: t.record };
    return [this.fire(art, 'timeout', 'expire')];
  }

  closeDispute(art, b) {
    const p = this.p;
    const t = this.tally(b);
    const side = p.tally_min_side;
    let retract = false;
    if (BigInt(t.yesVoters + t.noVoters) >= p.q_dispute && BigInt(t.yesVoters) >= side) {
      retract = t.yes * M >= this.tauRetract * (t.yes + t.no) || BigInt(t.noVoters) < side;
    }
    b.phase = 'closed';
    if (retract) {
      art.decision = { path: 'dispute', verdict: 'retract', tally: t.record };
      art.urgentReporter = null;
      return [this.fire(art, 'timeout', 'retract')];
    }
    art.decision = { path: 'dispute_kept', verdict: 'keep', tally: t.record };
    art.hidden = false; // LC-SAFE-5: a failed dispute lifts the hiding
    const verdict = this.activeIn(art.slot).length > 0 ? 'keep_superseded' : 'keep';
    const events = [this.fire(art, 'timeout', verdict)];
    if (art.urgentReporter !== null) {
      events.push({ event: 'penalty', agent: art.urgentReporter, kind: 'unfounded_urgent_report' });
      art.urgentReporter = null;
    }
    if (art.disputer !== null) events.push({ event: 'penalty', agent: art.disputer, kind: 'frivolous_dispute' });
    return events;
  }

  /** rules.md: at a tick an artifact is forgotten iff forgettable, not hidden under
   *  review, S > 0 and S >= Q, and at least min_active_agents agents are active. */
  forgetDue() {
    const weights = new Map();
    for (const a of this.agents.values()) if (!BARRING.has(a.sanction)) weights.set(a.id, this.weight(a.id));
    if (BigInt(weights.size) < this.p.min_active_agents) return [];
    let sum = 0n;
    for (const w of weights.values()) sum += w;
    const q = micro(this.p.alpha) * sum;
    const events = [];
    for (const art of this.arts.values()) {
      if (!FORGETTABLE.has(art.state) || (art.hidden && art.state !== 'retracted')) continue;
      let s = 0n;
      for (const [voter, conf] of art.forgetVotes) s += (weights.get(voter) ?? 0n) * conf;
      if (s > 0n && s >= q) {
        events.push(this.fire(art, 'forget'));
        art.tombstone = { artifact: art.id, slot: art.slot, submitter: art.submitter, round: art.round };
        art.digest = null;
        art.evidence = null;
      }
    }
    return events;
  }

  // --- the public state (rules.md "Observations") ---

  publicState() {
    const arts = new Map();
    for (const [id, a] of this.arts) {
      const b = a.ballot;
      let revealed = null;
      if (b && b.phase !== 'commit') {
        revealed = new Map(sorted(b.reveals.keys()).map((v) => [v, b.reveals.get(v).vote]));
      }
      arts.set(id, {
        slot: a.slot, submitter: a.submitter, state: a.state, hidden: a.hidden,
        dispute_count: a.disputeCount, resubmit_count: a.resubmitCount, deadline: a.deadline,
        decision: a.decision, digest: a.digest, evidence: a.evidence, round: a.round,
        ballot: b ? b.kind : null, phase: b ? b.phase : null, reviewers: sorted(a.reviewers),
        committed: b ? sorted(b.commitments.keys()) : [], revealed,
        forget_voters: sorted(a.forgetVotes.keys()), tombstone: a.tombstone,
      });
    }
    return { now: this.now, artifacts: arts };
  }
}

module.exports = { Lifecycle, commitment, canonical, micro, cmpStr, selectReviewers, SORTITION_DRAWS_PER_SEAT, pyFloat };
