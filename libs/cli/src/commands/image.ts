/**
 * `gpunet image push`: a container image into the team's blobs, content-addressed like a
 * dataset, so jobs name it by digest (`work.archive`) and nodes stage it before compute is held
 * instead of pulling it from a registry while the GPUs wait (decision 0019).
 */
import type { InputProgress } from '#sdk';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { formatBytes } from '../format.js';
import { byteBar } from '../progress.js';

const run = promisify(execFile);

export interface ImagePushOptions {
  /** An image of this machine's runtime to save and push instead of an archive file. */
  local?: string;
  /** Runtime that saves `--local` images. Default podman. */
  runtime?: 'podman' | 'docker';
  upload?: 'auto' | 'http' | 'nats';
}

export async function imagePush(ctx: CommandContext, archive: string | undefined, opts: ImagePushOptions): Promise<ExitCode> {
  const { out } = ctx;
  if ((archive === undefined) === (opts.local === undefined)) {
    throw new UsageError('give an image archive (`gpunet image push image.tar`) or a local image (`gpunet image push --local train:1`), not both');
  }
  const scratch = opts.local !== undefined ? await mkdtemp(join(tmpdir(), 'gpunet-image-')) : undefined;
  try {
    let file: string;
    if (opts.local !== undefined) {
      const runtime = opts.runtime ?? 'podman';
      file = join(scratch!, 'image.tar');
      out.note(`saving ${opts.local} with ${runtime}`);
      const args = runtime === 'podman' ? ['save', '--format', 'oci-archive', '--output', file, opts.local] : ['save', '--output', file, opts.local];
      await run(runtime, args, { maxBuffer: 16 * 1024 * 1024 }).catch((err: { stderr?: string; message: string }) => {
        throw new UsageError(`${runtime} could not save ${opts.local}: ${(err.stderr || err.message).trim().split('\n').at(-1)}`);
      });
    } else {
      file = resolve(ctx.io.cwd, archive!);
      if (!(await stat(file).catch(() => undefined))?.isFile()) throw new UsageError(`${archive} is not a file (an archive from \`podman save\`, \`docker save\` or an OCI archive)`);
    }
    const client = await ctx.client();
    const bar = byteBar(out, '');
    const spec = { work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, timeLimit: '1m' }, data: { inputs: [{ name: 'image', path: 'image.tar', from: file }] } };
    const { inputs } = await client.uploadInputs(spec as never, ctx.io.cwd, {
      ...(opts.upload ? { via: opts.upload } : {}),
      onProgress: (p: InputProgress) => bar.update(p.bytesDone, p.bytesTotal, `image ${p.phase}`),
    });
    bar.stop();
    const [pushed] = inputs;
    if (!pushed) throw new Error('the archive was not uploaded');
    const pushedArchive = { sha256: pushed.sha256, size: pushed.size };
    out.note(`pushed ${formatBytes(pushed.size)}, sent ${formatBytes(pushed.bytesUploaded)} (sha256 ${pushed.sha256})`);
    out.doc({ archive: pushedArchive, bytesUploaded: pushed.bytesUploaded, ...(opts.local !== undefined && { image: opts.local }) });
    out.line(`use it in a job: work: { kind: container, image: ${opts.local ?? 'NAME'}, archive: { sha256: ${pushedArchive.sha256}, size: ${pushedArchive.size} } }`);
    return EXIT.ok;
  } finally {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }
}
