/** `cellium explain`'s human output: the flow, the decision, each policy direction, the proposal. */
import type { CelliumExplanation } from '../../api/models.js';
import { keyValues } from '../output.js';

type Direction = NonNullable<CelliumExplanation['policy']>['ingress'];
type Side = CelliumExplanation['flow']['source'];

function side(s: Side, port?: number): string {
  const addr = s.ip ? (port ? (s.ip.includes(':') ? `[${s.ip}]:${port}` : `${s.ip}:${port}`) : s.ip) : '';
  const who = s.pod ?? s.labels.find((l) => l.startsWith('reserved:')) ?? `identity ${s.identity}`;
  return addr ? `${who} (${addr})` : who;
}

function direction(d: Direction, subject: string): string {
  const title = `${d.direction === 'ingress' ? 'Ingress at the destination' : 'Egress at the source'} (${subject}): ${d.verdict.toUpperCase()}${d.enforced ? '' : ' (not enforced)'}`;
  const lines = [title, `  ${d.why}`];
  let rule = '';
  for (const s of d.sections) {
    if (s.rule !== rule) lines.push(`  Rule ${(rule = s.rule)}:`);
    lines.push(`    ${s.pointer} ${s.deny ? 'denies' : 'allows'} ${d.direction === 'ingress' ? 'from' : 'to'} [${s.peers.join(' | ') || 'nothing'}] on ${s.ports}: ${s.why}`);
  }
  for (const r of d.selecting.filter((r) => !d.sections.some((s) => s.rule === r))) lines.push(`  Rule ${r}: no ${d.direction} section`);
  return lines.join('\n');
}

/** The explanation as people read it. */
export function renderExplanation(e: CelliumExplanation): string {
  const f = e.flow;
  const l4 = f.protocol === 'ICMP' || f.protocol === 'ICMPv6' ? f.protocol : `${f.protocol ?? 'no L4'}`;
  const out = [keyValues([
    ['Flow', `${side(f.source)} -> ${side(f.destination, f.protocol === 'ICMP' || f.protocol === 'ICMPv6' ? undefined : f.port)} ${l4}${f.direction === 'unknown' ? '' : `, ${f.direction}`}${f.service ? `, service ${f.service}` : ''}`],
    ...(f.uuid ? [['Flow ID', `${f.uuid}${f.time ? ` at ${f.time}` : ''}`] as [string, string]] : []),
    ['Drop reason', `${e.reason.name} (${e.reason.code}): ${e.reason.meaning}`],
    ['Decision', e.decision],
  ]).trimEnd()];
  for (const d of e.details) out.push(`  ${d}`);
  if (e.policy) {
    out.push('', `Policy revision ${e.policy.revision}: ${e.policy.verdict.toUpperCase()}`);
    out.push('', direction(e.policy.egress, side(f.source)), '', direction(e.policy.ingress, side(f.destination)));
  }
  if (e.proposal) {
    const kinds = [...new Set(e.proposal.objects.map((o) => String(o.kind)))].join(' and ');
    out.push('', `Proposed ${kinds} (checked: the policy trace with it added allows the flow):`, '---', e.proposal.text.trimEnd());
  }
  if (e.noProposal) out.push('', `No policy proposed: ${e.noProposal}`);
  if (e.rejected) out.push('', 'The candidate the check refused:', '---', e.rejected.text.trimEnd(), ...e.rejected.check.log.map((l) => `  ${l}`));
  return out.join('\n') + '\n';
}

/** The proposal as a diff against the repository: every line added (a proposal only adds rules). */
export function renderDiff(text: string, revision: number, rules: number): string {
  return [`--- policy repository (revision ${revision}, ${rules} rule${rules === 1 ? '' : 's'})`, '+++ with the proposed policy', ...text.trimEnd().split('\n').map((l) => `+${l}`)].join('\n') + '\n';
}
