// `hereabouts preflight`: the judgements of every listed NAD (preflight-judge.ts), counted, and as a table (pure).
import { columns } from './inventory.ts';
import { judgeNad, type NadJudgement, type Verdict } from './preflight-judge.ts';

export interface PreflightReport {
  /** The namespace listed; undefined: all of them. */
  readonly namespace?: string;
  /** The NADs whose IPAM is hereabouts or whereabouts (directly or in a conflist), sorted by namespace/name. */
  readonly nads: readonly NadJudgement[];
  /** NADs without spec.config ("namespace/name"): Multus reads their config from a node's file, unseen here. */
  readonly unchecked: readonly string[];
  readonly counts: Readonly<Record<Verdict, number>>;
}

export function preflightReport(items: readonly unknown[], namespace: string | undefined): PreflightReport {
  const nads: NadJudgement[] = [];
  const unchecked: string[] = [];
  for (const item of items) {
    const outcome = judgeNad(item);
    if (outcome.kind === 'no-config') unchecked.push(`${outcome.namespace}/${outcome.name}`);
    if (outcome.kind !== 'judged') continue;
    nads.push({
      namespace: outcome.namespace,
      name: outcome.name,
      verdict: outcome.verdict,
      findings: outcome.findings,
    });
  }
  const key = (n: NadJudgement): string => `${n.namespace}/${n.name}`;
  nads.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const counts = { same: 0, differs: 0, refuses: 0 };
  for (const nad of nads) counts[nad.verdict]++;
  return { ...(namespace === undefined ? {} : { namespace }), nads, unchecked: unchecked.sort(), counts };
}

export function formatPreflight(report: PreflightReport): string {
  const where = report.namespace === undefined ? 'all namespaces' : `namespace ${report.namespace}`;
  const { same, differs, refuses } = report.counts;
  let out =
    `${report.nads.length} NetworkAttachmentDefinition(s) with hereabouts/whereabouts IPAM in ${where}: ` +
    `${same} served as Whereabouts did, ${differs} with differences, ${refuses} refused\n`;
  if (report.nads.length > 0) {
    const rows: string[][] = [['NAD', 'VERDICT', 'DETAILS']];
    for (const nad of report.nads) {
      const name = `${nad.namespace}/${nad.name}`;
      if (nad.findings.length === 0) rows.push([name, nad.verdict, 'served as Whereabouts did']);
      nad.findings.forEach((f, i) => {
        const at = f.plugin === undefined ? '' : `${f.plugin}: `;
        const fix = f.fix === undefined ? '' : `; fix: ${f.fix}`;
        const admission = f.admission === true ? ' [refused by the admission policy when written]' : '';
        rows.push([i === 0 ? name : '', i === 0 ? nad.verdict : '', `${f.kind}: ${at}${f.message}${fix}${admission}`]);
      });
    }
    out += columns(rows);
  }
  if (report.unchecked.length > 0) {
    out += `not checked (no spec.config: Multus reads the node's file): ${report.unchecked.join(', ')}\n`;
  }
  return out;
}
