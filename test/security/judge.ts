// What every hostile request must get back: one CNI error JSON (an integer code and a message, no stack trace) or a
// valid result (ADD: the IPs; the other verbs: nothing), and never the internal-error code.
import { existsSync, lstatSync, readdirSync, readFileSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { Sandbox } from './corpus.ts';

export interface Verdict {
  readonly ok: boolean;
  readonly code: number;
  readonly why?: string;
}

const STACK = /\n\s+at |\bat [\w.<>]+ \(|\.ts:\d+:\d+|node:internal|\.cjs:\d+/;

export function judge(verb: string, exit: number | null, stdout: string): Verdict {
  if (STACK.test(stdout)) return { ok: false, code: -1, why: 'stack trace on stdout' };
  if (exit === 0) {
    if (verb !== 'ADD')
      return stdout === '' ? { ok: true, code: 0 } : { ok: false, code: 0, why: `${verb} printed on success` };
    const result = parse(stdout);
    return Array.isArray(result?.['ips'])
      ? { ok: true, code: 0 }
      : { ok: false, code: 0, why: 'ADD result without ips' };
  }
  const error = parse(stdout);
  const code = error?.['code'];
  if (typeof code !== 'number' || !Number.isInteger(code) || typeof error?.['msg'] !== 'string') {
    return { ok: false, code: -1, why: `exit ${exit} without a CNI error JSON` };
  }
  if (code === 999) return { ok: false, code, why: `internal error: ${error['msg'].slice(0, 300)}` };
  return { ok: true, code };
}

function parse(text: string): Record<string, unknown> | undefined {
  if (!text.endsWith('\n') || text.indexOf('\n') !== text.length - 1) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined; // not one JSON document: the verdict says so
  }
}

/** Every entry under `dir` (not following links) with what identifies its state; FIFOs and devices are not read. */
export function snapshot(dir: string, into = new Map<string, string>()): Map<string, string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = lstatSync(path);
    into.set(path, describe(path, st));
    if (st.isDirectory()) snapshot(path, into);
  }
  return into;
}

function describe(path: string, st: Stats): string {
  const head = `${st.mode.toString(8)} ${st.uid} ${st.size} ${st.mtimeMs}`;
  return st.isFile() && st.size < 1024 * 1024 ? `${head} ${readFileSync(path).toString('base64')}` : head;
}

/** Entries added, removed or changed between two snapshots. */
export function changes(before: Map<string, string>, after: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [path, state] of after)
    if (before.get(path) !== state) out.push(`${before.has(path) ? 'changed' : 'created'} ${path}`);
  for (const path of before.keys()) if (!after.has(path)) out.push(`removed ${path}`);
  return out;
}

const SYSTEM_FILES = ['/etc/passwd', '/etc/shadow', '/etc/group', '/root/.ssh/authorized_keys'];

/** What must not change in a corpus run: the sandbox outside the allowed directory, and a few system files. */
export function protectedState(s: Sandbox): Map<string, string> {
  const state = snapshot(s.host);
  for (const entry of snapshot(s.root).keys())
    if (!entry.startsWith(`${s.allowed}/`) && !state.has(entry)) state.set(entry, 'present');
  for (const file of SYSTEM_FILES)
    if (existsSync(file))
      snapshot(file.replace(/\/[^/]+$/, ''), new Map()).forEach((v, k) => k === file && state.set(k, v));
  return state;
}
