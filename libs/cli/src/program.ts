/**
 * The `gpunet` command line: commander wiring only. Each command's body lives in `commands/`,
 * returns its exit code, and throws named errors that `runCli` prints and maps to an exit code
 * (see `exit-codes.ts`).
 */
import { Command, CommanderError, Option } from 'commander';
import { CommandContext, type CommonOptions } from './context.js';
import { down } from './commands/down.js';
import { cancel, invoice, list, logs, output, status } from './commands/jobs.js';
import { simulate, type SimulateFlags } from './commands/simulate.js';
import { submit } from './commands/submit.js';
import { imagePush, type ImagePushOptions } from './commands/image.js';
import { estimate } from './commands/estimate.js';
import { capacity } from './commands/capacity.js';
import { AUDIT_FORMATS, auditJob, auditJobs, type AuditFormat, type AuditJobsFlags } from './commands/audit.js';
import { digestsExport, digestsSign } from './commands/digests.js';
import { disputeBundle } from './commands/dispute.js';
import { replayInvoice, replayJob } from './commands/replay.js';
import { verify } from './commands/verify.js';
import { invoiceShow, invoicesList, isInvoiceId } from './commands/invoices.js';
import { ledgerRebuild } from './commands/ledger.js';
import { keysCreate, keysList, keysRevoke, teamsCreate, teamsDisable, teamsList, teamsShow, type KeysCreateFlags } from './commands/keys.js';
import { natsAuthorization, natsConfig, natsKeys, nodeJoin, nodesAdmin, nodesEnroll, nodesList, nodesToken, type NodeAdminOptions } from './commands/nodes.js';
import { natsRecreateStream, type RecreateStreamOptions } from './commands/streams.js';
import { top, type TopOptions } from './commands/top.js';
import { pricesList, pricesPublish } from './commands/prices.js';
import { quotaSet, quotaShow, type QuotaSetFlags } from './commands/quota.js';
import { BUDGET_ON_EXCEED, budgetClear, budgetSet, budgetShow, type BudgetSetFlags } from './commands/budget.js';
import { up } from './commands/up.js';
import { wait } from './commands/wait.js';
import { UsageError } from './errors.js';
import { EXIT, exitCodeForError, type ExitCode } from './exit-codes.js';
import { Printer, type Io } from './output.js';
import { ENV } from './settings.js';
import { API_KEY_ROLES } from '#contracts';

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** `--json` and `--data-dir`, which every command takes. */
function withBaseOptions(cmd: Command): Command {
  return cmd
    .option('--json', 'print one JSON document on stdout (for scripts); progress and notices stay on stderr')
    .option('--data-dir <dir>', 'directory of the local network (state.json, logs, store); default env GPUNET_DATA_DIR, else ./.gpunet');
}

/** The connection flags of commands that talk to a network. */
function withConnection(cmd: Command): Command {
  return withBaseOptions(cmd)
    .option('--url <url>', `API URL; default env ${ENV.url}, else the one in <data-dir>/state.json`)
    .option('--api-key <key>', `team API key; default env ${ENV.apiKey}, else the one in <data-dir>/state.json`)
    .option('--nats <url>', `NATS URL for uploading inputs; default env ${ENV.nats}, else the one in <data-dir>/state.json`)
    .option('--nats-key <file>', `the team's NKey seed file (0600) NATS connections authenticate with; default env ${ENV.natsKey}, else the one in <data-dir>/state.json`);
}

const EXIT_HELP = `
Exit status: 0 done (wait: the job completed); 1 the job ended otherwise, a wait timed out, or the
command failed; 2 bad arguments, invalid spec, refused key, unknown job; 3 network unreachable.`;

/** Builds the program; `result.code` receives the exit code of the command that ran. */
export function buildProgram(io: Io, result: { code: ExitCode }): Command {
  const program = new Command('gpunet')
    .description('Rent GPU compute for batch jobs: run a local gpunet network, submit jobs, follow them, fetch outputs and bills.')
    .addHelpText('after', EXIT_HELP)
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({ writeOut: (s) => void io.stdout.write(s), writeErr: (s) => void io.stderr.write(s) })
    .exitOverride();

  /** Runs a command body with its context; errors are printed here, once, and mapped to an exit code. */
  const run =
    <A extends unknown[]>(body: (ctx: CommandContext, ...args: A) => Promise<ExitCode>, options: { flagHints?: boolean } = {}) =>
    async (...args: unknown[]) => {
      const cmd = args.at(-1) as Command;
      const ctx = new CommandContext(io, cmd.opts<CommonOptions>());
      try {
        result.code = await body(ctx, ...(args.slice(0, -1) as A));
      } catch (err) {
        ctx.out.error(err, options);
        result.code = exitCodeForError(err);
      } finally {
        await ctx.close();
      }
    };

  const command = (name: string) => program.command(name).exitOverride().showHelpAfterError('(add --help for usage)');

  withBaseOptions(command('up'))
    .description('start a local network: nats-server (JetStream), the five services and N execution agents, detached, logs in <data-dir>/logs')
    .option('--agents <n>', 'execution agents (nodes) to start', '2')
    .option('--gpus <n>', 'GPU slots each agent declares (when nvidia-smi finds none)', '4')
    .option('--gpu-model <name>', 'model name of the declared slots', 'sim-gpu')
    .option('--nats <url>', 'use this NATS server instead of starting one (load <data-dir>/nats/nats.conf\'s authorization into it, or pass --keys)')
    .option('--keys <dir>', 'the identities\' NKey seed files (svc-<service>.nk, node-<id>.nk, team-<team>.nk, operator.nk, 0600); default <data-dir>/keys, missing ones created')
    .option('--team <team>', 'another producer team besides `local`, with its own API key and NKey (repeatable)', (v: string, all: string[]) => [...all, v], [] as string[])
    .option('--postgres <url>', 'event store on this PostgreSQL database instead of SQLite <data-dir>/events.db')
    .option('--cluster', 'three nats-servers forming one JetStream cluster (from deploy/nats/cluster.conf), streams R3; needs --postgres')
    .option('--port <n>', 'HTTP port of the API; default: a free one')
    .option('--timeout <duration>', 'how long to wait for the next process to answer its health query (the wait goes on while they keep answering)', '60s')
    .addOption(new Option('--log-level <level>', 'log level of the services').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'))
    .action(run((ctx, opts) => up(ctx, opts as Parameters<typeof up>[1])));

  withBaseOptions(command('down'))
    .description('stop the local network: SIGTERM to every recorded process, SIGKILL to stragglers, nats-server last')
    .option('--timeout <duration>', 'how long services get to stop before SIGKILL', '30s')
    .action(run((ctx, opts) => down(ctx, opts as Parameters<typeof down>[1])));

  withConnection(command('submit'))
    .description('submit a job: a job.yaml (inputs with `from:` are uploaded first), or flags only with --script')
    .argument('[job.yaml | script args...]', 'the job file; with --script, arguments passed to the script (after --)')
    .option('--script <file>', 'run this script (no job file); small scripts travel inline')
    .option('--interpreter <program>', 'program that runs the script, e.g. bash or python3')
    .option('--name <name>', 'a label for the job')
    .option('--gpus <n>', 'GPUs to request (default 1 without a job file)')
    .option('--gpu-model <model>', 'GPU model required, e.g. A100-80GB')
    .option('--time-limit <duration>', 'longest the job may run, e.g. 10m (default 10m without a job file)')
    .option('--deadline <time>', 'finish by this ISO time or +duration')
    .option('--network', 'allow the job network access')
    .option('--input <name=path>', 'a local file or folder, placed at $GPUNET_INPUT_DIR/<name> (repeatable)', collect)
    .option('--output <glob>', 'output files to keep, relative to $GPUNET_OUTPUT_DIR (repeatable; default all)', collect)
    .option('--env <NAME=value>', 'environment variable for the job (repeatable)', collect)
    .option('--team <team>', `the API key's team, for storing inputs; default env ${ENV.team}, else state.json`)
    .option('--idempotency-key <key>', 'submit at most once per key (retries return the first job)')
    .addOption(new Option('--deadline-policy <policy>', 'a deadline the current plan cannot meet: reject (default) or warn (submit anyway)').choices(['reject', 'warn']))
    .option('--estimate <id>', 'hold the job to this estimate (the id `gpunet estimate` printed for the same request): its expected start and end become the job\'s quote')
    .addOption(
      new Option('--upload <via>', 'how local inputs travel: nats (straight into the team\'s bucket), http (intake\'s tus endpoint, only the API key needed), auto (default: nats when the NATS URL and team are known, else http)').choices(['auto', 'http', 'nats']),
    )
    .option('--wait', 'then wait for the job like `gpunet wait` (exit status by its outcome)')
    .option('--timeout <duration>', 'with --wait: give up waiting after this long')
    .action(run((ctx, operands, opts) => submit(ctx, operands as string[], opts as Parameters<typeof submit>[2]), { flagHints: true }));

  const image = command('image').description('container images as data: pushed once per team, content-addressed, staged to nodes before compute is held');
  withConnection(image.command('push').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('push an image archive (`podman save`, `docker save`, OCI archive) or a local image into your team\'s blobs; prints the `work.archive` to use')
    .argument('[archive]', 'the archive file')
    .option('--local <image>', 'save this image of the local runtime and push it')
    .addOption(new Option('--runtime <runtime>', 'runtime that saves --local images').choices(['podman', 'docker']))
    .addOption(new Option('--upload <via>', 'how the bytes travel: nats, http, auto (default)').choices(['auto', 'http', 'nats']))
    .action(run((ctx, archive, opts) => imagePush(ctx, archive as string | undefined, opts as ImagePushOptions)));

  withConnection(command('estimate'))
    .description('when a job would start and end and what it would cost at most, without submitting it')
    .argument('<job.yaml>', 'the job file (its local inputs are not uploaded)')
    .option('--gpus <n>', 'GPUs to request instead of the file\'s')
    .option('--gpu-model <model>', 'GPU model required, e.g. A100-80GB')
    .option('--time-limit <duration>', 'longest the job may run, e.g. 10m')
    .option('--deadline <time>', 'finish by this ISO time, +duration or phrase')
    .action(run((ctx, file, opts) => estimate(ctx, [file as string], opts as Parameters<typeof estimate>[2])));

  withConnection(command('capacity'))
    .description('free GPUs per GPU model per hour for the next 24 hours, from the live plan')
    .option('--hours <n>', 'hours ahead, 1–168', '24')
    .action(run((ctx, opts) => capacity(ctx, opts as { hours?: string })));

  withConnection(command('status'))
    .description('a job: state, attempts (node, GPUs, held time), outputs, timeline summary')
    .argument('<job-id>')
    .option('--timeline', 'also list every event of the job with its time and producer')
    .action(run((ctx, jobId, opts) => status(ctx, jobId as string, opts as { timeline?: boolean })));

  withConnection(command('list'))
    .description("the team's jobs, newest first")
    .option('--state <state>', 'only jobs in this state (repeatable, or comma-separated)', collect)
    .option('--limit <n>', 'jobs per page, 1–500', '50')
    .option('--all', 'every page, not just the first')
    .action(run((ctx, opts) => list(ctx, opts as Parameters<typeof list>[1])));

  withConnection(command('logs'))
    .description("a job's output lines: stdout to stdout, stderr and agent notices to stderr")
    .argument('<job-id>')
    .option('-f, --follow', 'keep following until the job ends')
    .action(run((ctx, jobId, opts) => logs(ctx, jobId as string, opts as { follow?: boolean })));

  withConnection(command('wait'))
    .description('wait for a job to end, showing each state; exit 0 only if it completed')
    .argument('<job-id>')
    .option('--timeout <duration>', 'give up after this long (exit 1)')
    .action(run((ctx, jobId, opts) => wait(ctx, jobId as string, opts as { timeout?: string })));

  withConnection(command('cancel'))
    .description('cancel a job: a queued job ends at once, a running one is stopped')
    .argument('<job-id>')
    .option('--reason <text>', 'why, kept in the job history')
    .action(run((ctx, jobId, opts) => cancel(ctx, jobId as string, opts as { reason?: string })));

  withConnection(command('output'))
    .description("download a job's output files, each verified against its sha256")
    .argument('<job-id>')
    .option('--dest <dir>', 'where to put them (default ./outputs/<job-id>)')
    .action(run((ctx, jobId, opts) => output(ctx, jobId as string, opts as { dest?: string })));

  withConnection(command('invoice'))
    .description(
      'charges as the ledger recorded them: one line per attempt, totals in units with 6 decimals; `invoice <job-id>` for one job; `invoice show <invoice-id>` (or `invoice <invoice-id>`) for a monthly invoice',
    )
    .argument('[show|job-id|invoice-id]', '`show`, a job id (its charges) or an invoice id `inv-<team>-<YYYY-MM>`')
    .argument('[invoice-id]', 'after `show`: the invoice')
    .option('--job <job-id>', "only this job's charges")
    .option('--from <time>', 'only attempts finished at or after this UTC time')
    .option('--to <time>', 'only attempts finished before this UTC time')
    .action(
      run((ctx, first, second, opts) => {
        const what = first as string | undefined;
        if (what === 'show') {
          if (!second) throw new UsageError('`gpunet invoice show` needs an invoice id', [{ path: 'invoice-id', message: 'is missing', fix: 'list them with `gpunet invoices list`' }]);
          return invoiceShow(ctx, second as string);
        }
        if (what !== undefined && isInvoiceId(what)) return invoiceShow(ctx, what);
        const flags = opts as Parameters<typeof invoice>[1];
        return invoice(ctx, what === undefined ? flags : { ...flags, job: what });
      }),
    );

  const invoices = command('invoices').description('monthly invoices of your team (UTC calendar months): drafts until the late-event cutoff, then finalized');
  withConnection(invoices.command('list').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('one row per invoice, newest month first')
    .option('--month <YYYY-MM>', 'only this month')
    .option('--status <status>', 'only draft or only finalized invoices')
    .action(run((ctx, opts) => invoicesList(ctx, opts as { month?: string; status?: string })));

  const prices = command('prices').description('versioned price lists: micro-units per GPU model per hour');
  withConnection(prices.command('list').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('every version, the one in force now marked')
    .action(run((ctx) => pricesList(ctx)));
  withConnection(prices.command('publish').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description(
      'publish a new version from a YAML or JSON file (API key with role billing): currency, ratesMicrosPerGpuHour { model: micros }, optional effectiveFrom (not in the past; default now), defaultRateMicrosPerGpuHour, minimumChargeMicros',
    )
    .argument('<file>')
    .action(run((ctx, file) => pricesPublish(ctx, file as string)));

  const quota = command('quota').description('GPU quotas per team and GPU model: concurrent GPUs, GPU-hours per month (UTC), borrowing of idle GPUs');
  withConnection(quota.command('set').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('set a team\'s quota for one GPU model (API key with role billing); it replaces the last one for that team and model')
    .requiredOption('--team <team>', 'the team')
    .requiredOption('--model <model>', 'the GPU model, e.g. H100')
    .option('--gpus <n|none>', 'GPUs of the model the team may hold at once; none: no limit (the default)')
    .option('--gpu-hours <n|none>', 'GPU-hours of the model per calendar month (UTC); none: no limit (the default)')
    .option('--borrow <on|off>', 'past --gpus, use GPUs no other team with quota room waits for (default off)')
    .action(run((ctx, opts) => quotaSet(ctx, opts as QuotaSetFlags)));
  withConnection(quota.command('show').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('quotas with what is in use, borrowed, GPU-hours used this month and jobs held back (your team; billing: every team)')
    .option('--team <team>', 'only this team (billing only for another team)')
    .action(run((ctx, opts) => quotaShow(ctx, opts as { team?: string })));
  const budget = command('budget').description(
    "monthly budgets per team, in the price list's currency: every submit reserves its worst case (GPUs × time limit × rate) and is refused, or held with reason BudgetExceeded, when that would pass the budget; running jobs are never stopped",
  );
  withConnection(budget.command('set').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('set a team\'s monthly budget (API key with role billing), e.g. `gpunet budget set --team team-ml --monthly 5000.00 --on-exceed hold`')
    .option('--team <team>', 'the team')
    .option('--monthly <amount>', "per UTC calendar month, in the price list's currency, e.g. 5000.00 (exact to 6 decimals)")
    .option('--on-exceed <mode>', `${BUDGET_ON_EXCEED.join('|')}: refuse such submits with the figures (default), or accept and hold them in the queue until the budget allows them`)
    .option('--thresholds <percents>', 'soft thresholds recorded as BudgetThresholdCrossed on the team feed, e.g. 50,80,100 (the default)')
    .option('--currency <code>', "default: the price list's currency in force")
    .action(run((ctx, opts) => budgetSet(ctx, opts as BudgetSetFlags)));
  withConnection(budget.command('show').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('a team\'s budget and this month\'s figures: spent, reserved, remaining, held jobs, thresholds crossed (your own team; role billing: any)')
    .option('--team <team>', 'default: your key\'s team')
    .action(run((ctx, opts) => budgetShow(ctx, opts as { team?: string })));
  withConnection(budget.command('clear').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('remove a team\'s budget: its jobs are no longer checked (role billing)')
    .option('--team <team>', 'the team')
    .action(run((ctx, opts) => budgetClear(ctx, opts as { team?: string })));

  const ledger = command('ledger').description("the ledger's projections");
  withConnection(ledger.command('rebuild').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('recompute every ledger projection from zero and compare each invoice byte for byte; exit 0 only when all are identical (roles billing, admin)')
    .action(run((ctx) => ledgerRebuild(ctx)));

  const adminKey = `admin key: --api-key, else env ${ENV.adminApiKey}, else ${ENV.apiKey}, else the operator key in <data-dir>/state.json`;
  const teams = command('teams').description(`teams (role operator; an admin sees its own team); every change is recorded as an event. Uses the ${adminKey}`);
  const teamsSub = (name: string) => withConnection(teams.command(name).exitOverride().showHelpAfterError('(add --help for usage)'));
  teamsSub('create')
    .description('create a team (role operator)')
    .argument('<team>', 'its id: 1–64 letters, digits, _ or -, e.g. team-ml')
    .option('--display-name <name>', 'name for people (default: the id)')
    .option('--time-zone <zone>', 'IANA time zone for times shown to the team, e.g. Europe/Berlin')
    .option('--contact <text>', 'who to reach about the team')
    .action(run((ctx, team, opts) => teamsCreate(ctx, team as string, opts as { displayName?: string; timeZone?: string; contact?: string })));
  teamsSub('list')
    .description('every team (an admin key: its own), with its state and active keys')
    .action(run((ctx) => teamsList(ctx)));
  teamsSub('show')
    .description('one team and its keys')
    .argument('<team>')
    .action(run((ctx, team) => teamsShow(ctx, team as string)));
  teamsSub('disable')
    .description('disable a team: every key of it is refused from now on, on every intake (role operator)')
    .argument('<team>')
    .option('--reason <text>', 'why, kept in the record')
    .action(run((ctx, team, opts) => teamsDisable(ctx, team as string, opts as { reason?: string })));

  const keys = command('keys').description(`API keys: issued, listed and revoked through intake, each change recorded as an event (who, what, when). Uses the ${adminKey}`);
  const keysSub = (name: string) => withConnection(keys.command(name).exitOverride().showHelpAfterError('(add --help for usage)'));
  keysSub('create')
    .description('issue a key and print it, this once (role operator; an admin: its own team, roles producer and admin)')
    .option('--team <team>', "the key's team (default: the admin key's team)")
    .option('--role <role>', `what it may do: ${API_KEY_ROLES.join(', ')}`)
    .option('--name <name>', 'a label, e.g. ci-nightly')
    .option('--expires <time>', 'refuse the key from this UTC time on, e.g. 2027-01-01T00:00:00Z (default: until revoked)')
    .action(run((ctx, opts) => keysCreate(ctx, opts as KeysCreateFlags)));
  keysSub('list')
    .description('key ids, team, role, created when and by whom, revoked or not (never the keys)')
    .option('--team <team>', "only this team's keys")
    .action(run((ctx, opts) => keysList(ctx, opts as { team?: string })));
  keysSub('revoke')
    .description('revoke a key: every intake refuses it within a second, on HTTP and NATS')
    .argument('<key-id>', 'as shown by `gpunet keys list`')
    .option('--reason <text>', 'why, kept in the record')
    .action(run((ctx, keyId, opts) => keysRevoke(ctx, keyId as string, opts as { reason?: string })));

  const nodes = command('nodes').description('execution nodes the recorder takes reports from, and their keys (operator)');
  withBaseOptions(nodes.command('enroll').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('enroll a node: the recorder records its reports signed with this NKey public key (NodeEnrolled); a new key replaces the old')
    .argument('<nodeId>', 'the node id the agent runs with (--node-id)')
    .requiredOption('--public-key <key>', 'the node key\'s public key (U…, e.g. `nk -inkey node.nk -pubout`)')
    .option('--by <who>', 'who enrolls it, for the record (default: operator <your user name>)')
    .option('--nats <url>', 'NATS URL of the network; default env GPUNET_NATS_URL, else the one in <data-dir>/state.json')
    .action(run((ctx, nodeId: string, opts) => nodesEnroll(ctx, nodeId, opts as Parameters<typeof nodesEnroll>[2])));
  withBaseOptions(nodes.command('list').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('every node: state (ready, cordoned, draining, drained, lost, offline), host, GPUs held/total, running attempts, last heartbeat, why it is cordoned or drained')
    .option('--nats <url>', 'NATS URL of the network; default env GPUNET_NATS_URL, else the one in <data-dir>/state.json')
    .action(run((ctx, opts) => nodesList(ctx, opts as Parameters<typeof nodesList>[1])));
  const nodeAdmin = (action: 'cordon' | 'drain' | 'uncordon', description: string) =>
    withBaseOptions(nodes.command(action).exitOverride().showHelpAfterError('(add --help for usage)'))
      .description(description)
      .argument('<nodeId>', 'as shown by `gpunet nodes list`')
      .option('--reason <text>', action === 'uncordon' ? 'why, for the record' : 'why, for the record and `gpunet nodes list` (required)')
      .option('--by <who>', 'who does it, for the record (default: operator <your user name>)')
      .option('--nats <url>', 'NATS URL of the network; default env GPUNET_NATS_URL, else the one in <data-dir>/state.json');
  nodeAdmin('cordon', 'place nothing new on the node (NodeCordoned); what runs there keeps running (operator)')
    .action(run((ctx, nodeId: string, opts) => nodesAdmin(ctx, 'cordon', nodeId, opts as NodeAdminOptions)));
  nodeAdmin('drain', 'place nothing new on the node and let what runs there finish; it is drained once its last attempt has released its GPUs (NodeDrainRequested, NodeDrained) (operator)')
    .option('--wait', 'then follow the node until it is drained, showing its running attempts')
    .option('--timeout <duration>', 'with --wait: give up after this long (exit 1)', '24h')
    .action(run((ctx, nodeId: string, opts) => nodesAdmin(ctx, 'drain', nodeId, opts as NodeAdminOptions)));
  nodeAdmin('uncordon', 'take back a cordon or drain: the node takes new work again (NodeUncordoned) (operator)')
    .action(run((ctx, nodeId: string, opts) => nodesAdmin(ctx, 'uncordon', nodeId, opts as NodeAdminOptions)));
  withBaseOptions(nodes.command('token').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('a one-time token a GPU machine joins as this node with (`gpunet node join`); only its hash is recorded (NodeJoinTokenIssued); printed once')
    .argument('<nodeId>', 'the node id the machine will join as')
    .option('--ttl <duration>', 'how long the token may be used', '1h')
    .option('--by <who>', 'who issues it, for the record (default: operator <your user name>)')
    .option('--joiner-key <file>', 'the network\'s joiner seed file the token carries; default env GPUNET_JOINER_NKEY_FILE, else <keys dir>/joiner.nk of the local network')
    .option('--nats <url>', 'NATS URL of the network; default env GPUNET_NATS_URL, else the one in <data-dir>/state.json')
    .action(run((ctx, nodeId: string, opts) => nodesToken(ctx, nodeId, opts as Parameters<typeof nodesToken>[2])));

  const node = command('node').description('this machine as an execution node');
  withBaseOptions(node.command('join').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('join the network with a token from `gpunet nodes token`: makes this node\'s key here (the seed never leaves the machine) and has it enrolled')
    .requiredOption('--token <token>', 'the join token (gpj1.…)')
    .option('--nats <url>', 'NATS URL(s) of the network, comma-separated; default env GPUNET_NATS_URL')
    .option('--key-file <file>', 'where the node\'s seed is kept (0600; reused when it exists); default node-<nodeId>.nk in the working directory')
    .option('--wait <duration>', 'then wait this long until NATS admits the new key (the control plane renders its authorization again)')
    .action(run((ctx, opts) => nodeJoin(ctx, opts as Parameters<typeof nodeJoin>[1])));

  const nats = command('nats').description('the NATS side of the network (operator)');
  withBaseOptions(nats.command('authorization').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('render the authorization every nats-server loads again: the keys directory\'s identities and every enrolled node\'s key (joined nodes are admitted by it)')
    .option('--keys <dir>', 'the identities\' seed files; default: the local network\'s')
    .option('--out <file>', 'write the authorization block here (what deploy/nats/cluster.conf includes); default: the local network\'s config')
    .option('--reload', 'then signal the local network\'s nats-servers to reload it (SIGHUP)')
    .option('--offline', 'the keys directory alone, without asking the recorder for enrolled nodes (a network\'s first start)')
    .option('--nats <url>', 'NATS URL of the network; default env GPUNET_NATS_URL, else the one in <data-dir>/state.json')
    .action(run((ctx, opts) => natsAuthorization(ctx, opts as Parameters<typeof natsAuthorization>[1])));
  withBaseOptions(nats.command('keys').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('make the seed files of the control plane\'s identities (services, recorder, operator, joiner) and of each --team, where missing')
    .requiredOption('--keys <dir>', 'the keys directory (0700; seeds 0600)')
    .option('--team <team>', 'a producer team\'s identity too (repeatable)', collect)
    .option('--signing-key <file>', 'also the network signing key the ledger signs chain heads with (decision 0011), where missing')
    .action(run((ctx, opts) => natsKeys(ctx, opts as Parameters<typeof natsKeys>[1])));
  withBaseOptions(nats.command('recreate-stream').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('delete a stream and make it again as the topology file defines it, with the durables it keeps messages for: what the server cannot change in place (GPUNET_EVENTS\' retention after an upgrade). Every service stopped, every durable caught up; refuses otherwise')
    .argument('<stream>', 'e.g. GPUNET_EVENTS')
    .option('--topology <file>', 'the topology file; default env GPUNET_TOPOLOGY_FILE, else deploy/topology.yaml of this checkout')
    .option('--nats <url>', 'NATS URL of the network; default env GPUNET_NATS_URL, else the one in <data-dir>/state.json')
    .action(run((ctx, stream, opts) => natsRecreateStream(ctx, stream as string, opts as RecreateStreamOptions)));
  withBaseOptions(nats.command('config').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('one cluster server\'s nats-server config from deploy/nats/cluster.conf (clients :4222, routes :6222, monitoring 127.0.0.1:8222)')
    .requiredOption('--name <name>', 'this server\'s name, unique in the cluster (e.g. ctl-1)')
    .requiredOption('--host <address>', 'this machine\'s address on the control network')
    .requiredOption('--peers <addresses>', 'every control machine\'s address, this one included, comma-separated')
    .requiredOption('--out <file>', 'where to write it (e.g. /etc/gpunet/nats/nats.conf); route.secret and authorization.conf live beside it')
    .option('--store-dir <dir>', 'JetStream\'s directory', '/var/lib/gpunet/nats')
    .action(run((ctx, opts) => natsConfig(ctx, opts as Parameters<typeof natsConfig>[1])));

  withBaseOptions(command('top'))
    .description('a live view of the network from every process\'s /metrics: queue by reason, jobs, GPUs per model, nodes, consumer lag, dead letters, relay lag, billed GPU time')
    .option('--once', 'print one snapshot and exit (with --json: the figures as one document)')
    .option('--interval <seconds>', 'refresh period', '2')
    .option('--targets <list>', 'name=http://host:port/metrics,… to scrape; default: every process of the local network (state.json)')
    .action(run((ctx, opts) => top(ctx, opts as TopOptions)));

  const audit = command('audit').description('audit jobs from the event store: what ran, how long, on what, what came back, what it cost (every query is recorded)');
  const auditSub = (name: string) => audit.command(name).exitOverride().showHelpAfterError('(add --help for usage)');
  const formatOption = () => new Option('--format <format>', 'table, json or csv (csv: one line per job, ms and micro-units)').choices([...AUDIT_FORMATS]).default('table');
  withConnection(auditSub('jobs'))
    .description("jobs with outcome, nodes, GPU model, phase durations, outputs and charge; a team key sees its team, a compliance key every team")
    .option('--team <team>', 'only this team (a team key may name only its own)')
    .option('--from <time>', 'only jobs submitted at or after this UTC time')
    .option('--to <time>', 'only jobs submitted before this UTC time')
    .option('--node <node-id>', 'only jobs with an attempt on this node')
    .option('--gpu-model <model>', 'only jobs with an attempt on this GPU model')
    .option('--outcome <outcome>', 'only jobs that ended this way: completed, failed, timeout, cancelled, node_lost, deadline, rejected, staging_failed, open')
    .option('--limit <n>', 'most jobs listed (fetched 500 per query)', '1000')
    .addOption(formatOption())
    .action(run((ctx, opts) => auditJobs(ctx, opts as AuditJobsFlags)));
  withConnection(auditSub('job'))
    .description("one job's full audit across every service: work digest, phase durations, nodes and GPUs, outputs with sha256, usage lines, timeline")
    .argument('<job-id>')
    .addOption(new Option('--format <format>', 'table or json').choices(['table', 'json']).default('table'))
    .action(run((ctx, jobId, opts) => auditJob(ctx, jobId as string, opts as { format?: AuditFormat })));

  const storeOption = () => new Option('--store <url>', 'the event store to read (sqlite:PATH or postgres://…); default env GPUNET_STORE_URL, else the local network\'s');
  const publicKeyOption = () =>
    new Option('--public-key <key|file>', "the network public key (U…) or a file holding it, to check the signed chain heads with; default env GPUNET_SIGNING_PUBLIC_KEY, else the local network's (state.json)");
  const digestsOption = () => new Option('--digests <dir>', 'also check the store against the digests exported earlier into this directory (`gpunet digests export`)');
  const replay = command('replay').description('re-derive from the event store and diff against what was recorded; exit 0 when identical, 1 otherwise (reads only)');
  withBaseOptions(replay.command('invoice').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('re-derive an invoice as of the store position recorded on it; line-by-line diff with the contributing event ids')
    .argument('<invoice-id>', 'e.g. inv-team-ml-2026-11')
    .addOption(storeOption())
    .option('--prices <file>', 'what-if: replay under this price list (JSON/YAML: currency, ratesMicrosPerGpuHour, …) instead of the stored ones; writes nothing')
    .option('--invoice <file>', 'compare with this copy of the invoice (JSON, e.g. a draft as it was sent) instead of the finalized one in the store')
    .addOption(publicKeyOption())
    .addOption(digestsOption())
    .action(run((ctx, id, opts) => replayInvoice(ctx, id as string, opts as { store?: string; prices?: string; invoice?: string })));
  withBaseOptions(replay.command('job').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description("re-derive a job's usage lines from the agents' events and the price lists, and its JobEnded from its facts, and diff against what the ledger recorded")
    .argument('<job-id>')
    .addOption(storeOption())
    .addOption(publicKeyOption())
    .addOption(digestsOption())
    .action(run((ctx, id, opts) => replayJob(ctx, id as string, opts as { store?: string })));

  withBaseOptions(command('verify'))
    .description(
      "check the event store's hash chain (every link, every stream head) and, with the network public key, every signed digest of its heads and those exported earlier (--digests); with --bundle, check a dispute bundle offline (no network, no store)",
    )
    .addOption(storeOption())
    .addOption(publicKeyOption())
    .addOption(digestsOption())
    .option('--bundle <file>', 'a file written by `gpunet dispute-bundle` (with --public-key: its heads must be the signed ones)')
    .action(run((ctx, opts) => verify(ctx, opts as { store?: string; bundle?: string })));

  const digests = command('digests').description("signed chain heads: the ledger signs every stream's head with the network key (every GPUNET_DIGEST_INTERVAL, default 5m, and on demand)");
  withConnection(digests.command('sign').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('ask the ledger to sign the chain heads now (over NATS; nothing new when the store has not moved since the last digest)')
    .action(run((ctx) => digestsSign(ctx)));
  withBaseOptions(digests.command('export').exitOverride().showHelpAfterError('(add --help for usage)'))
    .description('write every signed digest in the store as one JSON file in DIR (existing files are never overwritten); keep DIR away from the store')
    .argument('<dir>')
    .addOption(storeOption())
    .addOption(publicKeyOption())
    .action(run((ctx, dir, opts) => digestsExport(ctx, dir as string, opts as { store?: string; publicKey?: string })));

  withBaseOptions(command('dispute-bundle'))
    .description('verify the store, then write one file with an invoice, its contributing events (whole hash-chained streams), the chain heads and the latest signed digest with a proof per stream, for `gpunet verify --bundle FILE --public-key KEY`')
    .argument('<invoice-id>')
    .addOption(storeOption())
    .option('--out <file>', 'where to write it (default <invoice-id>.bundle.json)')
    .option('--invoice <file>', 'bundle this copy of a draft invoice instead of deriving it at the store head')
    .addOption(publicKeyOption())
    .addOption(digestsOption())
    .action(run((ctx, id, opts) => disputeBundle(ctx, id as string, opts as { store?: string; out?: string; invoice?: string })));

  withBaseOptions(command('simulate'))
    .description('replay an SWF trace (Parallel Workloads Archive) through the placement core in virtual time; print wait, slowdown and utilization')
    .requiredOption('--trace <file.swf>', 'the trace, in the Standard Workload Format')
    .option('--procs-per-gpu <n>', 'processors of the trace per GPU (GPUs = ceil(procs / n), at least 1); default 1')
    .option('--nodes <n>', "nodes of the simulated cluster; default: the trace header's MaxProcs (else MaxNodes) as GPUs / --gpus-per-node")
    .option('--gpus-per-node <n>', 'GPUs per node; default: the machine / --nodes, else 1 (one GPU per processor)')
    .addOption(new Option('--policy <policy>', 'placement policy: the core default, first come first served, or shortest requested time first').choices(['default', 'fcfs', 'sjf']))
    .addOption(new Option('--backfill <on|off>', 'EASY backfilling for any policy (default on); off: strict order').choices(['on', 'off']))
    .option('--reservation-depth <n>', 'waiting jobs that hold reservations (default: 1)')
    .addOption(new Option('--predictions <on|off>', 'run-time predictions from history (default on); off: the requested times').choices(['on', 'off']))
    .option('--long-work-share <percent>', 'headroom for short work: percent of the GPUs jobs predicted to run long may hold while short work flows (default policy 80; 100: none)')
    .option('--long-work-from <ms>', 'predicted run time (ms) from which a job is long work (default 3600000)')
    .option('--weights <k=v,...>', 'priority weights over the default, e.g. `age=1000,runTime=1000,size=0,fairShare=10000,ageCapMs=2592000000` (default policy only)')
    .action(run((ctx, opts) => simulate(ctx, opts as SimulateFlags)));

  return program;
}

/** Runs `gpunet` with `argv` (without node and script); resolves with the exit code. */
export async function runCli(argv: readonly string[], io: Io): Promise<ExitCode> {
  const result: { code: ExitCode } = { code: EXIT.ok };
  const program = buildProgram(io, result);
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are not failures; everything else commander refuses is a usage error
      // (it has printed its message already).
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    new Printer(io, argv.includes('--json')).error(err);
    return exitCodeForError(err);
  }
  return result.code;
}
