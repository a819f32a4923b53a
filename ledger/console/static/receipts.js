// The player's receipts, checked in the browser: the page hands over each receipt (the
// event's bytes and the checkpoint its write signed) and the club's policy; the browser
// fetches the newest cosigned checkpoint and the proofs from the log's public reads, with
// no cookie or token (the ledger cannot tell whose receipts are being checked), and checks
// every signature and hash itself (tlog.js). A failure says which check, for which receipt.
import * as tlog from "./tlog.js";

const RETRIES = 5;

/** A read that did not answer: the check could not run (which is not a pass). */
class Unreachable extends Error {}

const sleep = (seconds) => new Promise((done) => setTimeout(done, seconds * 1000));

// One read at a time, anonymous: the ledger keeps a small pool for callers without a
// token, and answers 503 with Retry-After when it is full; wait as it asks, a few times.
async function read(url) {
  for (let attempt = 0; ; attempt++) {
    let answer;
    try {
      answer = await fetch(url, {
        credentials: "omit", cache: "no-store", headers: { Accept: "application/json" },
      });
    } catch (error) {
      throw new Unreachable(`the ledger did not answer ${url} (${error.message})`);
    }
    if (answer.status === 503 && attempt < RETRIES) {
      await sleep(Math.min(Number(answer.headers.get("Retry-After")) || 1, 10));
      continue;
    }
    if (answer.status === 404) return null;
    if (!answer.ok) throw new Unreachable(`the ledger answered ${url} with ${answer.status}`);
    return answer.json();
  }
}

function hashes(list, what) {
  const out = (Array.isArray(list) ? list : []).map(tlog.fromHex);
  if (!Array.isArray(list) || out.some((h) => h === null || h.length !== 32)) {
    throw new tlog.CheckFailed(what, "the ledger's proof is not a list of SHA-256 hashes");
  }
  return out;
}

const words = (names) =>
  names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;

/** `work()`, its CheckFailed named `check` (the page names the check in the game's words). */
async function named(check, work) {
  try {
    return await work();
  } catch (error) {
    if (error instanceof tlog.CheckFailed) error.check = check;
    throw error;
  }
}

/** The checkpoint to check against: the newest any witness cosigned, read under the club's
 * policy; or, when none has been, the bank's newest, said to be the bank's word alone. */
async function newest(urls, policy) {
  const served = await read(urls.key);
  if (served === null || !policy.logs.some((log) => log.text === served.key)) {
    throw new tlog.CheckFailed("the log's key",
      "the key the ledger serves is not the log key in the club's policy");
  }
  const cosigned = await read(urls.cosigned);
  const note = cosigned?.note ?? (await read(urls.checkpoint))?.checkpoint;
  if (!note) throw new Unreachable("the ledger has no checkpoint to check against");
  const checkpoint = await named(cosigned ? "the cosigned checkpoint" : "the newest checkpoint",
    () => tlog.openCheckpoint(note, policy.logs));
  const by = cosigned ? [...(await named("the witnesses' cosignatures",
    () => tlog.cosignatures(note, policy.witnesses))).keys()] : [];
  return { ...checkpoint, cosigned: cosigned !== null, by, quorum: tlog.witnessed(policy, by) };
}

/** One receipt against `head`: "checked", "pending" (not yet in a cosigned tree), or a
 * CheckFailed naming the check. Consistency proofs are shared by receipts of one write. */
async function checkOne(receipt, head, policy, urls, proven) {
  const { position } = receipt;
  if (receipt.note === null) {
    throw new tlog.CheckFailed("the receipt", "no checkpoint the log signed holds this event");
  }
  const mine = await named("your receipt's signature",
    () => tlog.openCheckpoint(receipt.note, policy.logs));
  const frame = tlog.fromBase64(receipt.frame) ?? new Uint8Array();
  let event = null;
  try {
    event = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(frame));
  } catch { /* named below */ }
  if (event?.position !== position) {
    throw new tlog.CheckFailed("the event",
      `the event's bytes are not those of the event at position ${position}`);
  }
  const leaf = await tlog.leafHash(frame);
  const index = BigInt(position - 1);
  // In the cosigned tree when it reaches the event; else in the receipt's own tree, which
  // must then extend the cosigned one.
  const tree = BigInt(position) <= head.size ? head : mine;
  const proof = await read(`${urls.inclusion}?position=${position}&size=${tree.size}`);
  if (proof === null) {
    throw new tlog.CheckFailed("inclusion",
      `the ledger has no inclusion proof of it in the tree of ${tree.size}`);
  }
  if (proof.leaf_hash !== tlog.toHex(leaf)) {
    throw new tlog.CheckFailed("inclusion",
      "the ledger's leaf at this position is not the hash of this event: the event was changed");
  }
  await tlog.checkInclusion(index, tree.size, leaf, hashes(proof.proof, "inclusion"), tree.root);
  const [old, now] = mine.size <= head.size ? [mine, head] : [head, mine];
  const key = `${old.size}-${now.size}`;
  if (!proven.has(key)) proven.set(key, consistent(old, now, urls));
  await proven.get(key);
  return tree === head ? "checked" : "pending";
}

async function consistent(old, now, urls) {
  const path = old.size === now.size || old.size === 0n ? [] :
    hashes((await read(`${urls.consistency}?from=${old.size}&to=${now.size}`))?.proof, "consistency");
  await tlog.checkConsistency(old.size, now.size, old.root, now.root, path);
}

const SAID = { checked: "checked", pending: "not yet cosigned" };

// Each line of the statement that the receipt is for (the table is outside the section).
function mark(position, text, failed) {
  document.querySelectorAll(`[data-receipt="${position}"]`).forEach((cell) => {
    cell.textContent = text;
    cell.classList.toggle("failed", failed);
  });
}

async function checkAll(root) {
  const status = root.querySelector("#receipt-check-status");
  const problems = root.querySelector("#receipt-check-problems");
  const urls = root.dataset;
  const receipts = JSON.parse(root.querySelector("#receipts-data").textContent);
  const say = (text, alarm = false) => {
    status.textContent = text;
    status.classList.toggle("failed", alarm);
  };
  const problem = (text) => {
    const li = document.createElement("li");
    li.textContent = text;
    problems.appendChild(li);
  };
  let policy;
  let head;
  try {
    policy = await tlog.parsePolicy(root.querySelector("#club-policy").textContent);
    head = await newest(urls, policy);
  } catch (error) {
    if (error instanceof tlog.CheckFailed) {
      say(`The check FAILED: ${error.check}: ${error.message}.`, true);
      receipts.forEach((receipt) => mark(receipt.position, "not checked", false));
      root.dataset.done = "failed";
    } else {
      say(`The check could not run: ${error.message}. Nothing was checked.`);
      root.dataset.done = "not run";
    }
    return;
  }
  const counts = { checked: 0, pending: 0, failed: 0, unchecked: 0 };
  const proven = new Map();
  for (const [n, receipt] of receipts.entries()) {
    say(`Checking receipt ${n + 1} of ${receipts.length} in your browser…`);
    try {
      const result = await checkOne(receipt, head, policy, urls, proven);
      counts[result] += 1;
      mark(receipt.position, SAID[result], false);
    } catch (error) {
      if (!(error instanceof tlog.CheckFailed)) {
        counts.unchecked += 1;
        mark(receipt.position, "not checked", false);
        problem(`Position ${receipt.position}: not checked: ${error.message}.`);
        continue;
      }
      counts.failed += 1;
      mark(receipt.position, `FAILED (${error.check})`, true);
      problem(`Position ${receipt.position}: ${error.check} FAILED: ${error.message}.`);
    }
  }
  say(verdict(head, counts, receipts.length, policy), counts.failed > 0);
  // The outcome as an attribute, which a test (or a script of the player's) can wait for.
  root.dataset.done = counts.failed ? "failed" : counts.unchecked ? "not run" : "passed";
}

/** The whole check in words: how the receipts fared, then what they were checked against. */
function verdict(head, counts, total, policy) {
  const asks = tlog.describe(policy);
  const parts = [];
  const one = total === 1;
  if (counts.failed) {
    parts.push(one ? "The check of your receipt FAILED (below)."
      : `The check FAILED for ${counts.failed} of your ${total} receipts (each is named below).`);
  } else if (total === 0) parts.push("You have no receipts to check yet.");
  else if (counts.unchecked) {
    parts.push(one ? "Your receipt could not be checked (below)."
      : `${counts.unchecked} of your ${total} receipts could not be checked (below).`);
  } else parts.push(one ? "Your receipt holds." : `All ${total} of your receipts hold.`);
  if (counts.pending && !counts.failed) {
    const which = one ? "It is" : `${counts.pending} of them ${counts.pending === 1 ? "is" : "are"}`;
    parts.push(`${which} signed by the bank and not yet in a cosigned tree: ` +
      `the witnesses cosign a little behind the writes, so look again in a minute.`);
  }
  const bankAlone = "which proves only what the bank says";
  const they = one ? "it was" : "they were";
  if (!policy.witnesses.size) {
    parts.push(`The club's policy names no witness: ${they} checked against the checkpoint ` +
      `of size ${head.size}, signed by the bank alone, ${bankAlone}.`);
  } else if (!head.cosigned) {
    parts.push(`No witness has cosigned a checkpoint of this ledger yet: ${they} checked ` +
      `against its newest checkpoint, of size ${head.size}, signed by the bank alone, ${bankAlone}.`);
  } else if (!head.by.length) {
    parts.push(`The newest cosigned checkpoint, of size ${head.size}, is cosigned by none of ` +
      `the witnesses of the club's policy (it asks ${asks}), and so ${bankAlone}.`);
  } else {
    parts.push(`Checked in your browser against the checkpoint of size ${head.size} cosigned by ` +
      `${words(head.by)}` + (head.quorum ? ` (the club's policy asks ${asks}).`
        : `, short of the club's policy, which asks ${asks}: not yet witnessed by its quorum.`));
  }
  return parts.join(" ");
}

document.querySelectorAll("[data-receipt-check]").forEach(checkAll);
