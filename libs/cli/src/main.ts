/** Entry point of the `gpunet` command (see bin/gpunet.js). */
import { runCli } from './program.js';

// A reader that goes away (`gpunet audit jobs | head`) is no error of ours: stop quietly, as
// Unix tools do, instead of dying on an unhandled EPIPE with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    throw err;
  });
}

const code = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() });
// Let stdout drain (a big --json document into a pipe) instead of process.exit() cutting it off;
// open handles (none are left by design) would otherwise keep us alive, hence the unref'd timer.
process.exitCode = code;
setTimeout(() => process.exit(code), 2_000).unref();
