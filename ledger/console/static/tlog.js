// The checks a receipt takes, done by the browser alone: RFC 9162's Merkle proofs, C2SP's
// signed notes, checkpoints, cosignatures (tlog-cosignature, cosignature/v1) and policies
// (tlog-policy). SHA-256 and Ed25519 are the browser's own (WebCrypto), so that nothing
// the ledger sends is trusted but bytes to check. No I/O here: receipts.js fetches.
// The Python beside it is ledger/store/log/ (merkle.py, checkpoint.py, cosignature.py,
// policy.py); tests/console/test_tlog_js.py holds the two to the same answers.

const encoder = new TextEncoder();

/** A check that ran and failed: `check` names which, the message says what it found. */
export class CheckFailed extends Error {
  constructor(check, message) {
    super(message);
    this.check = check;
  }
}

/** The browser cannot do the check at all (no WebCrypto, or no Ed25519 in it). */
export class Unsupported extends Error {}

function subtle() {
  // WebCrypto is offered to secure contexts only: a page over HTTPS, or from this machine.
  if (!globalThis.crypto?.subtle) {
    throw new Unsupported("this browser offers its cryptography (WebCrypto) only to pages " +
      "served over HTTPS or from this machine, and this page is neither");
  }
  return crypto.subtle;
}

// -- bytes --------------------------------------------------------------------------------

/** Standard padded base64 in its one spelling (as checkpoint.py reads it), else null. */
export function fromBase64(text) {
  let raw;
  try {
    raw = atob(text);
  } catch {
    return null;
  }
  const bytes = Uint8Array.from(raw, (c) => c.charCodeAt(0));
  return toBase64(bytes) === text ? bytes : null;
}

export function toBase64(bytes) {
  return btoa(String.fromCharCode(...bytes));
}

export function fromHex(text) {
  if (typeof text !== "string" || !/^([0-9a-f]{2})*$/.test(text)) return null;
  return Uint8Array.from(text.match(/../g) || [], (pair) => parseInt(pair, 16));
}

export function toHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function equal(a, b) {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export async function sha256(...parts) {
  return new Uint8Array(await subtle().digest("SHA-256", concat(...parts)));
}

// SHA-256(0x00 || record), RFC 9162 2.1.1: the prefix keeps a leaf from passing as a node.
export const leafHash = (record) => sha256(Uint8Array.of(0), record);
// SHA-256(0x01 || left || right), RFC 9162 2.1.1.
export const nodeHash = (left, right) => sha256(Uint8Array.of(1), left, right);

// -- Merkle proofs (sizes and indexes as BigInt: a tree may pass 2**53) -------------------

const odd = (n) => (n & 1n) === 1n;

/** Throw CheckFailed unless `path` leads from `leaf`, record `index` (from 0) of the tree
 * of `size`, to `root` (RFC 9162, 2.1.3.2). */
export async function checkInclusion(index, size, leaf, path, root) {
  const fail = (why) => { throw new CheckFailed("inclusion", why); };
  if (index >= size) fail(`record ${index} is not in a tree of ${size}`);
  let fn = index;
  let sn = size - 1n;
  let r = leaf;
  for (const p of path) {
    if (sn === 0n) fail("the path is longer than the tree is deep");
    if (odd(fn) || fn === sn) {
      r = await nodeHash(p, r);
      while (!odd(fn) && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) fail("the path is shorter than the tree is deep");
  if (!equal(r, root)) {
    fail(`the path does not lead from the event to the root of the tree of ${size}`);
  }
}

/** Throw CheckFailed unless `path` proves the tree of `oldSize` with `oldRoot` a prefix of
 * the tree of `newSize` with `newRoot` (RFC 9162, 2.1.4.2). */
export async function checkConsistency(oldSize, newSize, oldRoot, newRoot, path) {
  const fail = (why) => { throw new CheckFailed("consistency", why); };
  const notPrefix = `the tree of ${oldSize} is not a prefix of the tree of ${newSize}`;
  if (oldSize > newSize) fail(`a tree of ${oldSize} cannot be a prefix of one of ${newSize}`);
  if (oldSize === newSize) {
    if (path.length !== 0 || !equal(oldRoot, newRoot)) fail(`two different trees of size ${oldSize}`);
    return;
  }
  if (oldSize === 0n) {  // every tree extends the empty one
    if (path.length !== 0) fail("a proof from the empty tree is empty");
    return;
  }
  if (path.length === 0) fail("the proof is empty");
  // An old tree that is a complete subtree is the proof's own first hash.
  const hashes = (oldSize & (oldSize - 1n)) === 0n ? [oldRoot, ...path] : [...path];
  let fn = oldSize - 1n;
  let sn = newSize - 1n;
  while (odd(fn)) {
    fn >>= 1n;
    sn >>= 1n;
  }
  let fr = hashes[0];
  let sr = hashes[0];
  for (const c of hashes.slice(1)) {
    if (sn === 0n) fail("the proof is longer than the trees call for");
    if (odd(fn) || fn === sn) {
      fr = await nodeHash(c, fr);
      sr = await nodeHash(c, sr);
      while (!odd(fn) && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      sr = await nodeHash(sr, c);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n || !equal(fr, oldRoot) || !equal(sr, newRoot)) fail(notPrefix);
}

// -- signed notes and checkpoints (c2sp.org/signed-note, tlog-checkpoint) -----------------

const EM_DASH = "\u2014";
const LOG_KEY = 0x01;      // an Ed25519 log key's type byte (signed-note)
const WITNESS_KEY = 0x04;  // an Ed25519 cosignature/v1 key's (tlog-cosignature)

/** The text (to its last blank line) and the signature lines of a signed note, unverified. */
export function parseNote(note) {
  const fail = (why) => { throw new CheckFailed("note", why); };
  if (typeof note !== "string" || !note.endsWith("\n")) fail("a signed note ends with a newline");
  const split = note.lastIndexOf("\n\n");
  if (split < 0) fail("a signed note has a blank line before its signatures");
  const text = note.slice(0, split + 1);
  const signatures = note.slice(split + 2, -1).split("\n").map((line) => {
    const [dash, name, blob, ...rest] = line.split(" ");
    const bytes = blob === undefined ? null : fromBase64(blob);
    if (dash !== EM_DASH || !name || rest.length || bytes === null || bytes.length < 5) {
      fail(`a signature line is not '${EM_DASH} <name> <base64>': ${line}`);
    }
    const keyId = new DataView(bytes.buffer).getUint32(0);
    return { name, keyId, signature: bytes.slice(4) };
  });
  return { text, signatures };
}

/** A checkpoint's text: origin, size (BigInt), root (32 bytes). */
export function parseCheckpoint(text) {
  const [origin, size, root] = text.split("\n");
  const bytes = root === undefined ? null : fromBase64(root);
  if (!origin || !/^(0|[1-9][0-9]*)$/.test(size ?? "") || bytes === null || bytes.length !== 32) {
    throw new CheckFailed("note", "the note's text is not a checkpoint (origin, size, root)");
  }
  return { origin, size: BigInt(size), root: bytes };
}

/** A key as signed-note writes it, `<name>+<key id hex>+<base64(type || public key)>`,
 * with its id checked: SHA-256(name || 0x0A || type || public key)[:4]. */
export async function parseKey(vkey, type) {
  const what = type === LOG_KEY ? "log key" : "witness key";
  const [, name, id, material] = /^([^+\s]+)\+([0-9a-f]{8})\+(\S+)$/.exec(vkey ?? "") ?? [];
  const bytes = material ? fromBase64(material) : null;
  if (bytes === null || bytes.length !== 33 || bytes[0] !== type) {
    throw new CheckFailed("policy", `not an Ed25519 ${what}: ${vkey}`);
  }
  const digest = await sha256(encoder.encode(name + "\n"), bytes);
  const keyId = new DataView(digest.buffer).getUint32(0);
  if (keyId !== parseInt(id, 16)) throw new CheckFailed("policy", `the ${what} ${name}'s id is not its hash`);
  let key;
  try {
    key = await subtle().importKey("raw", bytes.slice(1), { name: "Ed25519" }, false, ["verify"]);
  } catch (error) {
    if (error instanceof Unsupported) throw error;
    throw new Unsupported(`this browser's WebCrypto cannot check Ed25519 signatures (${error.name})`);
  }
  return { name, keyId, text: vkey, key };
}

const ed25519 = (key, signature, message) =>
  subtle().verify({ name: "Ed25519" }, key, signature, message);

const claims = (key, line) => line.name === key.name && line.keyId === key.keyId;

/** The checkpoint in `note` once one of `logs` (parsed keys) signed it, as checkpoint.py's
 * open_note: a line by a known key that does not verify fails the note. */
export async function openCheckpoint(note, logs) {
  const { text, signatures } = parseNote(note);
  let signed = false;
  for (const line of signatures) {
    const log = logs.find((key) => claims(key, line));
    if (!log) continue;
    if (!(await ed25519(log.key, line.signature, encoder.encode(text)))) {
      throw new CheckFailed("signature", `the log's signature (${log.name}) does not verify`);
    }
    signed = true;
  }
  if (!signed) throw new CheckFailed("signature", "the log's key did not sign it");
  return parseCheckpoint(text);
}

/** The witnesses (policy name to parsed key) that cosigned `note`, with each one's time:
 * cosignature/v1, Ed25519 over "cosignature/v1\ntime <t>\n" and the checkpoint's text.
 * A line by a listed witness that does not verify is a forgery or a corruption: it fails. */
export async function cosignatures(note, witnesses) {
  const { text, signatures } = parseNote(note);
  const found = new Map();
  for (const [name, witness] of witnesses) {
    for (const line of signatures) {
      if (!claims(witness, line)) continue;
      const blob = line.signature;
      const time = blob.length === 72 ? new DataView(blob.buffer, blob.byteOffset).getBigUint64(0) : -1n;
      const message = encoder.encode(`cosignature/v1\ntime ${time}\n${text}`);
      if (time < 0n || !(await ed25519(witness.key, blob.slice(8), message))) {
        throw new CheckFailed("cosignature", `the cosignature by ${name} does not verify`);
      }
      found.set(name, time > (found.get(name) ?? 0n) ? time : found.get(name));
    }
  }
  return found;
}

// -- policies (c2sp.org/tlog-policy, as policy.py reads them) -----------------------------

/** The logs' and witnesses' keys, the groups and the quorum of a policy's text. */
export async function parsePolicy(text) {
  const policy = { logs: [], witnesses: new Map(), groups: new Map(), quorum: null };
  for (const raw of text.split("\n")) {
    const words = raw.replaceAll("\t", " ").split(" ").filter(Boolean);
    if (!words.length || words[0].startsWith("#")) continue;
    const [keyword, ...args] = words;
    if (keyword === "log") policy.logs.push(await parseKey(args[0], LOG_KEY));
    else if (keyword === "witness") policy.witnesses.set(args[0], await parseKey(args[1], WITNESS_KEY));
    else if (keyword === "group") {
      const members = args.slice(2);
      const k = args[1] === "all" ? members.length : args[1] === "any" ? 1 : Number(args[1]);
      policy.groups.set(args[0], { threshold: k, members });
    } else if (keyword === "quorum") policy.quorum = args[0];
    else throw new CheckFailed("policy", `a policy line this page cannot read: ${raw}`);
  }
  if (!policy.logs.length || !policy.quorum) {
    throw new CheckFailed("policy", "a policy names a log and a quorum");
  }
  return policy;
}

/** Whether the witnesses `names` make the policy's quorum. */
export function witnessed(policy, names, of = policy.quorum) {
  if (of === "none") return true;
  if (policy.witnesses.has(of)) return names.includes(of);
  const group = policy.groups.get(of);
  return group.members.filter((m) => witnessed(policy, names, m)).length >= group.threshold;
}

/** The quorum in words, as policy.py's describe(): `2 of treasurer, auditor, chair`. */
export function describe(policy, of = policy.quorum) {
  if (of === "none") return "no witness";
  if (policy.witnesses.has(of)) return of;
  const group = policy.groups.get(of);
  const parts = group.members.map((m) => describe(policy, m));
  const inner = parts.map((p) => (p.includes(" of ") ? `(${p})` : p)).join(", ");
  const all = group.threshold === parts.length && parts.length > 1;
  return all ? `all of ${inner}` : `${group.threshold} of ${inner}`;
}
