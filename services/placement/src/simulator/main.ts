/**
 * The simulator as a process, for `gpunet simulate` (libs/ may not import a service; see
 * docs/decisions/0005-simulator-placement.md):
 *
 *   node dist/services/placement/src/simulator/main.js '{"trace":"FILE.swf","options":{...}}'
 *
 * The one argument is a JSON request: the trace path (relative to the working directory) and the
 * {@link SimulateOptions}. Stdout gets exactly one JSON document: `{"report": SimulationReport}`
 * with exit 0, or `{"error": {code, message, issues}}` with exit 2 (the request or the trace is
 * invalid) or 1 (anything else). The file read is the only I/O.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { POLICY_NAMES } from './policies.js';
import { ClusterSizeUnknownError, simulate, type SimulateOptions } from './simulate.js';
import { SwfParseError } from './swf.js';

const PositiveInt = z.number().int().min(1);
const Request = z.object({
  trace: z.string().min(1),
  options: z
    .object({
      procsPerGpu: PositiveInt.optional(),
      nodes: PositiveInt.optional(),
      gpusPerNode: PositiveInt.optional(),
      policy: z.enum(POLICY_NAMES).optional(),
      backfill: z.boolean().optional(),
      reservationDepth: z.number().int().min(0).max(10_000).optional(),
      predictions: z.boolean().optional(),
      longWork: z.object({ sharePercent: z.number().int().min(1).max(100).optional(), fromMs: PositiveInt.optional() }).strict().optional(),
      weights: z
        .object({
          age: z.number().min(0).optional(),
          ageCapMs: PositiveInt.optional(),
          fairShare: z.number().min(0).optional(),
          size: z.number().min(0).optional(),
          sizeFullGpus: PositiveInt.optional(),
          runTime: z.number().min(0).optional(),
          runTimeScaleMs: PositiveInt.optional(),
        })
        .strict()
        .optional(),
    })
    .strict()
    .default({}),
});

interface ErrorDoc {
  code: string;
  message: string;
  issues: { path: string; message: string; fix?: string }[];
}

async function run(argv: readonly string[]): Promise<{ doc: unknown; exit: number }> {
  let json: unknown;
  try {
    json = JSON.parse(argv[0] ?? '');
  } catch (err) {
    return usage({ code: 'usage', message: `the argument must be a JSON request: ${(err as Error).message}`, issues: [] });
  }
  const parsed = Request.safeParse(json);
  if (!parsed.success) {
    return usage({ code: 'usage', message: 'invalid simulation request', issues: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) });
  }
  let text: string;
  try {
    text = await readFile(parsed.data.trace, 'utf8');
  } catch (err) {
    // The CLI prints the summary before the first ': ' and then the issues: the reason goes in the issue.
    return usage({ code: 'trace_unreadable', message: `cannot read the trace ${parsed.data.trace}`, issues: [{ path: '--trace', message: (err as Error).message, fix: 'give the path of an SWF file' }] });
  }
  try {
    return { doc: { report: simulate(text, parsed.data.options as SimulateOptions, () => performance.now()) }, exit: 0 };
  } catch (err) {
    if (err instanceof SwfParseError) return usage({ code: err.code, message: err.message, issues: err.issues.map((i) => ({ ...i })) });
    if (err instanceof ClusterSizeUnknownError) return usage({ code: 'cluster_size_unknown', message: err.message, issues: [{ path: '--nodes', message: 'required for this trace', fix: 'add --nodes N (and --gpus-per-node G)' }] });
    return { doc: { error: { code: 'internal', message: err instanceof Error ? err.message : String(err), issues: [] } }, exit: 1 };
  }
}

function usage(error: ErrorDoc): { doc: unknown; exit: number } {
  return { doc: { error }, exit: 2 };
}

const { doc, exit } = await run(process.argv.slice(2));
process.stdout.write(`${JSON.stringify(doc)}\n`);
process.exitCode = exit;
