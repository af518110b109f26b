'use strict';
// JSON as Python's `json` module reads and writes it, where that differs from JSON.parse.
//
// Why not JSON.parse: the protocol distinguishes integers from floats (a tier of `1.0` is
// `invalid_input`, because Python's json.loads makes it a float), integers may exceed 2^53
// (the sortition `seed` is printed in decimal inside a sha256 input), and Python's json.loads
// accepts the literals NaN, Infinity and -Infinity.  So:
//
//   integers (no fraction, no exponent) -> BigInt
//   other numbers                       -> Number (correctly rounded, as Python's float())
//   objects                             -> null-prototype objects (duplicate keys: last wins)
//
// `dump` writes BigInt as decimal digits and Map in insertion order (plain objects would
// move integer-like keys such as "42" to the front).

class JsonError extends Error {}

function parse(text) {
  let i = 0;
  const n = text.length;
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };
  const fail = (why) => {
    throw new JsonError(`${why} at char ${i}`);
  };
  const literal = (word, value) => {
    if (text.startsWith(word, i)) {
      i += word.length;
      return value;
    }
    return fail('invalid literal');
  };
  const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;

  function value() {
    ws();
    if (i >= n) fail('unexpected end');
    const c = text[i];
    if (c === '{') return object();
    if (c === '[') return array();
    if (c === '"') return string();
    if (c === 'n') return literal('null', null);
    if (c === 't') return literal('true', true);
    if (c === 'f') return literal('false', false);
    if (c === 'N') return literal('NaN', NaN);
    if (c === 'I') return literal('Infinity', Infinity);
    if (c === '-' && text.startsWith('-Infinity', i)) return literal('-Infinity', -Infinity);
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m === null) fail('expected a value');
    i = NUMBER.lastIndex;
    if (m[1] === undefined && m[2] === undefined) return BigInt(m[0]);
    return Number(m[0]);
  }

  function string() {
    i++; // opening quote
    let out = '';
    let start = i;
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i++;
        return out;
      }
      if (c < 0x20) fail('invalid control character');
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(start, i);
      const e = text[i + 1];
      const simple = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
      if (e in simple) {
        out += simple[e];
        i += 2;
      } else if (e === 'u') {
        const hex = text.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('invalid \\u escape');
        out += String.fromCharCode(parseInt(hex, 16)); // pairs combine in UTF-16 by themselves
        i += 6;
      } else {
        fail('invalid escape');
      }
      start = i;
    }
  }

  function array() {
    i++;
    const out = [];
    ws();
    if (text[i] === ']') {
      i++;
      return out;
    }
    for (;;) {
      out.push(value());
      ws();
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === ']') {
        i++;
        return out;
      }
      fail('expected , or ]');
    }
  }

  function object() {
    i++;
    const out = Object.create(null);
    ws();
    if (text[i] === '}') {
      i++;
      return out;
    }
    for (;;) {
      ws();
      if (text[i] !== '"') fail('expected a key');
      const key = string();
      ws();
      if (text[i] !== ':') fail('expected :');
      i++;
      out[key] = value();
      ws();
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === '}') {
        i++;
        return out;
      }
      fail('expected , or }');
    }
  }

  const v = value();
  ws();
  if (i !== n) fail('extra data');
  return v;
}

/** Python's json.dumps(..., ensure_ascii=False) for the values this driver emits. */
function dump(v) {
  if (v === null || v === undefined) return 'null';
  switch (typeof v) {
    case 'bigint':
      return v.toString();
    case 'number':
      if (!Number.isInteger(v)) throw new TypeError(`non-integer ${v} in output`);
      return String(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'string':
      return JSON.stringify(v); // same escapes as Python for well-formed strings
    default:
      break;
  }
  if (Array.isArray(v)) return `[${v.map(dump).join(',')}]`;
  const entries = v instanceof Map ? [...v.entries()] : Object.entries(v);
  return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${dump(x)}`).join(',')}}`;
}

const isDict = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Map);

module.exports = { parse, dump, isDict, JsonError };
