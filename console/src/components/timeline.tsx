/**
 * A job's life drawn to scale: one lane of phases (staging, queued, held, running, output,
 * released) and one lane per attempt with its billed span (GPUs held → attempt finished, the
 * span the ledger meters). Pure function of the job view and "now" (for a job still going).
 */
import type { JobView } from '../api/client';
import { formatDuration } from '../format/money';
import { formatLocal, utcTitle } from '../format/time';

export interface Span {
  phase: 'staging' | 'queued' | 'held' | 'running' | 'output' | 'released';
  from: number;
  to: number;
  attempt?: number;
}

const ms = (iso: string | undefined) => (iso === undefined ? undefined : Date.parse(iso));

/** The phases of a job, in order, each with its start and end (ms since epoch). */
export function phasesOf(job: JobView, now: number): Span[] {
  const at = (type: string) => ms(job.timeline.find((t) => t.type === type)?.at);
  const ended = ms(job.ended?.endedAt);
  const end = ended ?? now;
  const spans: Span[] = [];
  const submitted = ms(job.submittedAt)!;
  const staged = at('InputsStaged');
  spans.push({ phase: 'staging', from: submitted, to: staged ?? (job.attempts[0] ? ms(job.attempts[0].placedAt)! : end) });
  let cursor = staged ?? submitted;
  for (const a of job.attempts) {
    const placed = ms(a.placedAt)!;
    const held = ms(a.heldAt);
    const started = ms(a.startedAt);
    const finished = ms(a.finishedAt);
    const released = ms(a.releasedAt);
    spans.push({ phase: 'queued', from: cursor, to: held ?? placed, attempt: a.attempt });
    if (held !== undefined) {
      spans.push({ phase: 'held', from: held, to: started ?? finished ?? end, attempt: a.attempt });
      if (started !== undefined) spans.push({ phase: 'running', from: started, to: finished ?? end, attempt: a.attempt });
    }
    if (finished !== undefined) {
      const stored = at('OutputsStored');
      const outEnd = stored !== undefined && stored >= finished ? stored : released ?? end;
      spans.push({ phase: 'output', from: finished, to: outEnd, attempt: a.attempt });
      if (released !== undefined) spans.push({ phase: 'released', from: Math.max(released, outEnd), to: Math.max(ended ?? released, released), attempt: a.attempt });
    }
    cursor = released ?? finished ?? end;
  }
  if (job.attempts.length === 0 && staged !== undefined) spans.push({ phase: 'queued', from: staged, to: end });
  return spans.filter((s) => s.to >= s.from);
}

/** Billed span of each attempt (held → finished), as the ledger meters it. */
export function billedOf(job: JobView, now: number): { attempt: number; from: number; to: number; open: boolean }[] {
  return job.attempts
    .filter((a) => a.heldAt !== undefined)
    .map((a) => ({ attempt: a.attempt, from: ms(a.heldAt)!, to: ms(a.finishedAt) ?? now, open: a.finishedAt === undefined }));
}

const W = 1000;
const LANE = 26;
const LEFT = 110;

export function Timeline({ job, now }: { job: JobView; now: number }) {
  const phases = phasesOf(job, now);
  const billed = billedOf(job, now);
  const t0 = Date.parse(job.submittedAt);
  const t1 = Math.max(t0 + 1, ...phases.map((p) => p.to), ...billed.map((b) => b.to));
  const x = (t: number) => LEFT + ((t - t0) / (t1 - t0)) * (W - LEFT - 10);
  const height = LANE * (2 + billed.length) + 20;
  const ticks = Array.from({ length: 6 }, (_, i) => t0 + ((t1 - t0) * i) / 5);
  return (
    <figure className="timeline">
      <svg viewBox={`0 0 ${W} ${height}`} role="img" aria-labelledby="timeline-title" preserveAspectRatio="none" style={{ width: '100%', height }}>
        <title id="timeline-title">{`Timeline of ${job.jobId}: ${phases.map((p) => `${p.phase} ${formatDuration(p.to - p.from)}`).join(', ')}`}</title>
        <text x={4} y={LANE - 8} className="lane-label">phases</text>
        {phases.map((p, i) => (
          <g key={i} data-phase={p.phase}>
            <rect x={x(p.from)} y={LANE - 20} width={Math.max(1.5, x(p.to) - x(p.from))} height={16} className={`phase phase-${p.phase}`}>
              <title>{`${p.phase}${p.attempt ? ` (attempt ${p.attempt})` : ''}: ${formatDuration(p.to - p.from)}, ${utcTitle(new Date(p.from).toISOString())} → ${utcTitle(new Date(p.to).toISOString())}`}</title>
            </rect>
          </g>
        ))}
        {billed.map((b, i) => (
          <g key={b.attempt} data-billed={b.attempt}>
            <text x={4} y={LANE * (i + 2) - 8} className="lane-label">billed #{b.attempt}</text>
            <rect x={x(b.from)} y={LANE * (i + 2) - 20} width={Math.max(1.5, x(b.to) - x(b.from))} height={16} className={`billed${b.open ? ' open' : ''}`}>
              <title>{`attempt ${b.attempt} billed ${formatDuration(b.to - b.from)}${b.open ? ' so far' : ''}`}</title>
            </rect>
          </g>
        ))}
        {ticks.map((t, i) => (
          <g key={i}>
            <line x1={x(t)} x2={x(t)} y1={0} y2={height - 16} className="tick" />
            <text x={x(t)} y={height - 4} className="tick-label" textAnchor={i === 0 ? 'start' : i === 5 ? 'end' : 'middle'}>{formatLocal(new Date(t).toISOString(), { timeOnly: true })}</text>
          </g>
        ))}
      </svg>
      <figcaption>
        <ul className="legend">
          {(['staging', 'queued', 'held', 'running', 'output', 'released'] as const).map((p) => (
            <li key={p}><span className={`swatch phase-${p}`} aria-hidden="true" /> {p} {formatDuration(phases.filter((s) => s.phase === p).reduce((n, s) => n + s.to - s.from, 0))}</li>
          ))}
          <li><span className="swatch billed" aria-hidden="true" /> billed {formatDuration(billed.reduce((n, b) => n + b.to - b.from, 0))}</li>
        </ul>
      </figcaption>
    </figure>
  );
}
