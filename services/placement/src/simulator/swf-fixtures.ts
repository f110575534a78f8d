/** Builders for the simulator's specs. */

/** An SWF job line from the fields the simulator reads; the rest are -1. */
export function swfLine(f: { job: number; submit: number; run: number; procs: number; req?: number; alloc?: number; user?: number; group?: number }): string {
  const fields = Array<number>(18).fill(-1);
  fields[0] = f.job;
  fields[1] = f.submit;
  fields[3] = f.run;
  fields[4] = f.alloc ?? f.procs;
  fields[7] = f.procs;
  fields[8] = f.req ?? -1;
  fields[11] = f.user ?? 1;
  fields[12] = f.group ?? -1;
  return fields.join(' ');
}

/** A trace: a MaxProcs header, then one line per job. */
export function swfTrace(maxProcs: number, jobs: Parameters<typeof swfLine>[0][]): string {
  return [`; MaxProcs: ${maxProcs}`, ...jobs.map(swfLine)].join('\n');
}
