/** Entry point of the `gpunet` command (see bin/gpunet.js). */
import { runCli } from './program.js';

const code = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() });
// Let stdout drain (a big --json document into a pipe) instead of process.exit() cutting it off;
// open handles (none are left by design) would otherwise keep us alive, hence the unref'd timer.
process.exitCode = code;
setTimeout(() => process.exit(code), 2_000).unref();
