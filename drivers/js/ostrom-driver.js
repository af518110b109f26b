#!/usr/bin/env node
'use strict';
// An ostrom conformance driver in JavaScript (Node.js >= 20, standard library only).
//
//   ostrom conform --layer lifecycle -- node drivers/js/ostrom-driver.js
//
// It speaks the driver protocol of docs/conformance.md: one JSON object per line on stdin,
// exactly one JSON object per line on stdout for each (hello, reset, step, bye), and
// implements the `lifecycle` layer: an independent implementation of the orchestrator of
// docs/rules.md (lifecycle.js), parameters as in the table (params.js), Python-compatible
// JSON (pyjson.js).  Anything it has to say besides replies goes to stderr.

const readline = require('readline');
const { parse, dump, isDict } = require('./pyjson');
const { buildParams } = require('./params');
const { Lifecycle } = require('./lifecycle');

const PROTOCOL = 'ostrom-driver/1';
const IMPLEMENTATION = 'ostrom-js 0.1 (node ' + process.version + ')';

/** setup.agents: registry entries {id, tier, weight?, reputation?, sanction?, subscriptions?},
 *  entered one after the other as `set_agent` commands (so a weight outside [w_min, w_max]
 *  or an unknown key makes the reset fail, and a repeated id updates the earlier entry). */
function enterAgents(instance, setup) {
  if (!isDict(setup)) throw new Error('setup must be an object');
  const extra = Object.keys(setup).filter((k) => k !== 'agents');
  if (extra.length) throw new Error(`setup: unknown key(s) ${extra.join(', ')}`);
  const list = setup.agents ?? [];
  if (!Array.isArray(list) || !list.every(isDict)) throw new Error('setup: agents must be a list of objects');
  list.forEach((entry, n) => {
    const cmd = Object.create(null);
    cmd.op = 'set_agent';
    for (const [k, v] of Object.entries(entry)) if (k !== 'id') cmd[k] = v;
    cmd.agent = entry.id;
    const { result } = instance.apply(cmd);
    if (result !== 'ok') throw new Error(`setup: bad agent entry ${n} (${result})`);
  });
}

function handle(msg, session) {
  if (!isDict(msg)) return { type: 'error', message: 'a message must be a JSON object' };
  switch (msg.type) {
    case 'hello':
      if (msg.protocol !== PROTOCOL) return { type: 'error', message: `unsupported protocol ${msg.protocol}` };
      return { type: 'hello', protocol: PROTOCOL, implementation: IMPLEMENTATION, layers: ['lifecycle'] };
    case 'reset':
      session.instance = null;
      if (msg.layer !== 'lifecycle') return { type: 'error', message: `layer ${msg.layer} not implemented` };
      try {
        const params = buildParams(msg.params === undefined ? Object.create(null) : msg.params);
        const instance = new Lifecycle(params);
        enterAgents(instance, msg.setup === undefined ? Object.create(null) : msg.setup);
        session.instance = instance;
      } catch (e) {
        return { type: 'error', message: String(e.message || e) };
      }
      return { type: 'ready' };
    case 'step': {
      if (session.instance === null) return { type: 'error', message: 'step before reset' };
      if (!('command' in msg)) return { type: 'error', message: 'a step needs a command' };
      const obs = session.instance.apply(msg.command);
      return { type: 'observation', result: obs.result, events: obs.events, state: session.instance.publicState() };
    }
    default:
      return { type: 'error', message: `unknown message type ${msg.type}` };
  }
}

function main() {
  const session = { instance: null };
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  rl.on('line', (line) => {
    if (line.trim() === '') return;
    let msg;
    try {
      msg = parse(line);
    } catch (e) {
      process.stdout.write(dump({ type: 'error', message: `not JSON: ${e.message}` }) + '\n');
      return;
    }
    if (isDict(msg) && msg.type === 'bye') {
      rl.close();
      return;
    }
    let reply;
    try {
      reply = handle(msg, session);
    } catch (e) {
      // an internal error: say so instead of dying mid-vector
      process.stderr.write(`ostrom-driver: ${e.stack || e}\n`);
      reply = { type: 'error', message: `internal error: ${e.message || e}` };
    }
    process.stdout.write(dump(reply) + '\n');
  });
  rl.on('close', () => process.exit(0));
}

if (require.main === module) main();

module.exports = { handle, enterAgents };
