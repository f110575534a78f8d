"""Types of gpunet's messages, generated from contracts/generated/json-schema.

Do not edit: run `python3 clients/python/tools/generate_types.py` (or `npm run contracts:export`).
One TypedDict per message: an event's `data` (e.g. `JobEnded`), a request (`SubmitJob`), the
`data` of a reply (`GetJobReply` is the job view), and the documents (`JobSpec`, `FeedEntry`).
"""
# fmt: off
from __future__ import annotations

from typing import Any, Dict, List, Literal, NotRequired, TypedDict, Union

# The key that tried (authenticated, so attributable).
AdminActionRefusedDataBy = TypedDict("AdminActionRefusedDataBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "role": Literal["producer", "compliance", "billing", "admin", "operator"],  # `producer`: submits and reads its team's jobs; `compliance`: reads, and audits every team; `billing`: charges, invoices, price lists; `admin`: everything within
})

# What it was tried on.
AdminActionRefusedDataTarget = TypedDict("AdminActionRefusedDataTarget", {
    "team": NotRequired[str],  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "keyId": NotRequired[str],  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "role": NotRequired[Literal["producer", "compliance", "billing", "admin", "operator"]],  # `producer`: submits and reads its team's jobs; `compliance`: reads, and audits every team; `billing`: charges, invoices, price lists; `admin`: everything within
})

# An authenticated key tried to manage teams or keys beyond its role or team, and was refused: who, what, when, why.
AdminActionRefusedData = TypedDict("AdminActionRefusedData", {
    "action": Literal["teams:create", "teams:disable", "teams:read", "keys:create", "keys:revoke", "keys:read", "quotas:set", "quotas:read"],  # What was tried.
    "by": AdminActionRefusedDataBy,  # The key that tried (authenticated, so attributable).
    "target": AdminActionRefusedDataTarget,  # What it was tried on.
    "reason": str,  # Why it was refused, as answered.
    "transport": Literal["http", "nats"],  # Where the request came in.
    "refusedAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# Metadata every event carries; covered by the hash chain.
AdminActionRefusedMetadata = TypedDict("AdminActionRefusedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# An authenticated key tried to manage teams or keys beyond its role or team, and was refused: who, what, when, why. Subject: `gpunet.evt.AdminActionRefused.*.*`. Schema version 1.
AdminActionRefused = TypedDict("AdminActionRefused", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["AdminActionRefused"],  # Always `AdminActionRefused`.
    "data": AdminActionRefusedData,  # An authenticated key tried to manage teams or keys beyond its role or team, and was refused: who, what, when, why.
    "metadata": AdminActionRefusedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# The API key that made the change (its id and team), never the key itself.
ApiKeyIssuedDataIssuedBy = TypedDict("ApiKeyIssuedDataIssuedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# An API key was issued to a team with a role: its id and sha256 (never the key), who issued it and when. Takes effect at once on every intake.
ApiKeyIssuedData = TypedDict("ApiKeyIssuedData", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # The team the key acts for.
    "role": Literal["producer", "compliance", "billing", "admin", "operator"],  # `producer`: submits and reads its team's jobs; `compliance`: reads, and audits every team; `billing`: charges, invoices, price lists; `admin`: everything within
    "name": NotRequired[str],  # A label for people, e.g. `ci-nightly`.
    "sha256": str,  # Lower-case hex sha256 of the key: the key itself is shown once to its creator and never recorded.
    "expiresAt": NotRequired[str],  # From this time the key is refused; absent: until revoked.
    "issuedBy": ApiKeyIssuedDataIssuedBy,  # The API key that made the change (its id and team), never the key itself.
    "issuedAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# Metadata every event carries; covered by the hash chain.
ApiKeyIssuedMetadata = TypedDict("ApiKeyIssuedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# An API key was issued to a team with a role: its id and sha256 (never the key), who issued it and when. Takes effect at once on every intake. Subject: `gpunet.evt.ApiKeyIssued.*.*`. Schema version 1.
ApiKeyIssued = TypedDict("ApiKeyIssued", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["ApiKeyIssued"],  # Always `ApiKeyIssued`.
    "data": ApiKeyIssuedData,  # An API key was issued to a team with a role: its id and sha256 (never the key), who issued it and when. Takes effect at once on every intake.
    "metadata": ApiKeyIssuedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# The API key that made the change (its id and team), never the key itself.
ApiKeyRevokedDataRevokedBy = TypedDict("ApiKeyRevokedDataRevokedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# An API key was revoked: who, when, why. Every intake refuses it from then on (within a second).
ApiKeyRevokedData = TypedDict("ApiKeyRevokedData", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # The key's team.
    "sha256": str,  # sha256 of the key revoked: a later key under the same id (a bootstrap file entry replaced with a new key) is not revoked by this event.
    "reason": NotRequired[str],  # Why, for the record (e.g. `leaked in a CI log`).
    "revokedBy": ApiKeyRevokedDataRevokedBy,  # The API key that made the change (its id and team), never the key itself.
    "revokedAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# Metadata every event carries; covered by the hash chain.
ApiKeyRevokedMetadata = TypedDict("ApiKeyRevokedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# An API key was revoked: who, when, why. Every intake refuses it from then on (within a second). Subject: `gpunet.evt.ApiKeyRevoked.*.*`. Schema version 1.
ApiKeyRevoked = TypedDict("ApiKeyRevoked", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["ApiKeyRevoked"],  # Always `ApiKeyRevoked`.
    "data": ApiKeyRevokedData,  # An API key was revoked: who, when, why. Every intake refuses it from then on (within a second).
    "metadata": ApiKeyRevokedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# Who asks: set by intake from the caller's key; the subject accepts only intake (and the operator). Never copied from a request body.
AuditJobRequester = TypedDict("AuditJobRequester", {
    "keyId": str,  # Id of the API key that asked (never the key itself).
    "team": str,  # The key's team.
    "role": str,  # The key's role, e.g. `producer`, `billing`, `compliance`.
    "allTeams": bool,  # True when the answer may cover every team (a compliance key's audit, or the operator); false confines it to `team`.
})

# One job's full audit across every service: work, durations, nodes and GPUs, outputs, cost, timeline (behind `GET /v1/audit/jobs/{jobId}`). Subject: `gpunet.qry.ledger.AuditJob`. Schema version 1.
AuditJob = TypedDict("AuditJob", {
    "requester": AuditJobRequester,  # Who asks: set by intake from the caller's key; the subject accepts only intake (and the operator). Never copied from a request body.
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
})

AuditJobReplyJob1WorkSpecWork1Script1 = TypedDict("AuditJobReplyJob1WorkSpecWork1Script1", {
    "path": str,  # Path of the script inside the job's inputs (relative to `GPUNET_INPUT_DIR`), e.g. `code/train.sh`.
})

AuditJobReplyJob1WorkSpecWork1Script2 = TypedDict("AuditJobReplyJob1WorkSpecWork1Script2", {
    "inline": str,  # The script text itself; the agent writes it to a file in the run's work directory.
})

# Run a script as a process on the node.
AuditJobReplyJob1WorkSpecWork1 = TypedDict("AuditJobReplyJob1WorkSpecWork1", {
    "kind": Literal["script"],  # A script run as a process on the node.
    "script": Union[AuditJobReplyJob1WorkSpecWork1Script1, AuditJobReplyJob1WorkSpecWork1Script2],  # Where the script comes from: `{ path }` inside the inputs, or `{ inline }` text.
    "interpreter": NotRequired[str],  # Program that runs the script, e.g. `bash` or `python3`. Default: the script's `#!` line, else `sh`.
    "args": NotRequired[List[str]],  # Arguments passed to the script.
    "env": NotRequired[Dict[str, str]],  # Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.
})

# The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is held) and loaded there; `image` is then its name for people. Absent: `image` is pulled by the node when it does not hold it.
AuditJobReplyJob1WorkSpecWork2Archive = TypedDict("AuditJobReplyJob1WorkSpecWork2Archive", {
    "sha256": str,  # sha256 of the image archive (`podman save` / `docker save` / OCI archive) as `gpunet image push` stored it in the team's blobs.
    "size": int,  # Size in bytes of the archive.
    "keep": NotRequired[str],  # How long the node keeps the staged archive after the job, e.g. `1d`, so later jobs start from its cache; absent: removed at release when no job needs it.
})

# Run a container image on the node.
AuditJobReplyJob1WorkSpecWork2 = TypedDict("AuditJobReplyJob1WorkSpecWork2", {
    "kind": Literal["container"],  # A container image run on the node.
    "image": str,  # Container image reference, e.g. `ghcr.io/acme/train:1.4` (pin a digest for reproducible runs).
    "archive": NotRequired[AuditJobReplyJob1WorkSpecWork2Archive],  # The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is hel
    "command": NotRequired[List[str]],  # Overrides the image's entrypoint; default: the image's own.
    "args": NotRequired[List[str]],  # Arguments passed after the command.
    "env": NotRequired[Dict[str, str]],  # Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.
})

# One input: a file or folder by content address.
AuditJobReplyJob1WorkSpecDataInputsItem = TypedDict("AuditJobReplyJob1WorkSpecDataInputsItem", {
    "name": str,  # Name of the input, unique within the job, e.g. `dataset`.
    "path": str,  # Where the input appears, relative to `GPUNET_INPUT_DIR` (read-only), e.g. `data/train`; not `.` (the directory itself).
    "kind": NotRequired[Literal["file", "folder"]],  # `file`: sha256 addresses the file's bytes. `folder`: sha256 addresses the folder manifest (see FolderManifest).
    "sha256": str,  # Content address: sha256 of the file, or of the folder manifest for a folder.
    "size": int,  # Size in bytes of the blob that sha256 addresses (the file, or the folder manifest).
    "keepMs": NotRequired[int],  # How long to keep the staged input after the job, in ms; absent: removed at release.
    "dataset": NotRequired[str],  # Name the input as one of the team's datasets, e.g. `imagenet-2012`: it is kept for related jobs (in the object store and in node caches) until a later job of th
})

# What the job reads.
AuditJobReplyJob1WorkSpecData = TypedDict("AuditJobReplyJob1WorkSpecData", {
    "inputs": List[AuditJobReplyJob1WorkSpecDataInputsItem],  # Files and folders the job reads, by content address; staged before compute is held (staging is not billed).
})

# A signal before the time limit; absent: none.
AuditJobReplyJob1WorkSpecRequestWarning = TypedDict("AuditJobReplyJob1WorkSpecRequestWarning", {
    "signal": Literal["SIGUSR1", "SIGUSR2", "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGWINCH"],  # Signal sent to the job's process group, e.g. `SIGUSR1`.
    "beforeMs": int,  # How long before the time limit, in ms.
})

# What the job needs.
AuditJobReplyJob1WorkSpecRequest = TypedDict("AuditJobReplyJob1WorkSpecRequest", {
    "gpus": int,  # Number of GPUs, a whole number ≥ 1.
    "gpuModel": NotRequired[str],  # Required GPU model; absent: any model.
    "timeLimitMs": int,  # Longest the job may run once started, in ms.
    "deadline": NotRequired[str],  # When the job must be finished by, as written: an ISO-8601 time (`2025-07-01T18:00:00Z`), a duration from submission (`+6h`, `in 90m`), or a phrase in the team's
    "network": bool,  # Whether the job may use the network.
    "warning": NotRequired[AuditJobReplyJob1WorkSpecRequestWarning],  # A signal before the time limit; absent: none.
})

# Which files of the run to keep.
AuditJobReplyJob1WorkSpecOutputs = TypedDict("AuditJobReplyJob1WorkSpecOutputs", {
    "globs": List[str],  # Glob patterns, relative to `GPUNET_OUTPUT_DIR`, of the files to keep after the run, e.g. `model/**`.
    "maxBytes": NotRequired[int],  # Most bytes of output to keep; files beyond it are skipped and the result is marked truncated.
})

# Run the job again when it fails with one of these exit codes, up to maxAttempts.
AuditJobReplyJob1WorkSpecRetry = TypedDict("AuditJobReplyJob1WorkSpecRetry", {
    "exitCodes": List[int],  # Exit codes after which the job is run again (from its last checkpoint), e.g. `[75]`. Other failures end the job.
    "maxAttempts": int,  # Most attempts that may end in one of `exitCodes`, the first one included; attempts lost with their node do not count.
})

# Saving the checkpoint directory; absent: the node's default interval.
AuditJobReplyJob1WorkSpecCheckpoint = TypedDict("AuditJobReplyJob1WorkSpecCheckpoint", {
    "intervalMs": int,  # How often the checkpoint directory is saved while the job runs, in ms.
})

# Memory and disk caps the job asked for; absent: the node's defaults.
AuditJobReplyJob1WorkSpecResources = TypedDict("AuditJobReplyJob1WorkSpecResources", {
    "memoryBytes": NotRequired[int],  # Memory cap in bytes; absent: the node's default per GPU.
    "diskBytes": NotRequired[int],  # Disk cap in bytes; absent: the node's default per GPU.
})

# The spec as JobSubmitted recorded it.
AuditJobReplyJob1WorkSpec = TypedDict("AuditJobReplyJob1WorkSpec", {
    "name": NotRequired[str],  # A label for people, e.g. `resnet50-finetune`; not unique.
    "work": Union[AuditJobReplyJob1WorkSpecWork1, AuditJobReplyJob1WorkSpecWork2],  # What to run: a script (`kind: script`) or a container image (`kind: container`).
    "data": AuditJobReplyJob1WorkSpecData,  # What the job reads.
    "request": AuditJobReplyJob1WorkSpecRequest,  # What the job needs.
    "outputs": AuditJobReplyJob1WorkSpecOutputs,  # Which files of the run to keep.
    "retry": NotRequired[AuditJobReplyJob1WorkSpecRetry],  # Run the job again when it fails with one of these exit codes, up to maxAttempts.
    "checkpoint": NotRequired[AuditJobReplyJob1WorkSpecCheckpoint],  # Saving the checkpoint directory; absent: the node's default interval.
    "resources": NotRequired[AuditJobReplyJob1WorkSpecResources],  # Memory and disk caps the job asked for; absent: the node's defaults.
})

AuditJobReplyJob1WorkInputsItem = TypedDict("AuditJobReplyJob1WorkInputsItem", {
    "name": str,  # Input name from the spec.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

# What ran.
AuditJobReplyJob1Work = TypedDict("AuditJobReplyJob1Work", {
    "spec": AuditJobReplyJob1WorkSpec,  # The spec as JobSubmitted recorded it.
    "specSha256": str,  # sha256 of the spec as canonical JSON (keys sorted at every level).
    "inputs": List[AuditJobReplyJob1WorkInputsItem],  # Inputs as storage verified them (InputsStaged).
    "workDigest": NotRequired[str],  # What the agent ran, as JobStarted.work recorded it: `sha256:` of the script file, or the image digest the runtime resolved (the last attempt that recorded one).
    "workKind": NotRequired[Literal["script", "container"]],  # `script` or `container`, as JobStarted.work recorded it.
    "runtime": NotRequired[str],  # Container runtime that ran the image, when one did.
    "digestSource": Literal["recorded", "derived"],  # `recorded`: an agent recorded what ran (JobStarted.work); `derived`: none did, only the spec digest and staged inputs tell what was asked to run.
    "note": NotRequired[str],  # What the digest does and does not prove.
})

# Integer milliseconds per phase; a phase that did not happen (yet) is absent. Spans across services mix clocks (placement vs agent); negative spans count 0.
AuditJobReplyJob1Durations = TypedDict("AuditJobReplyJob1Durations", {
    "stagingMs": NotRequired[int],  # Inputs staged by storage (JobSubmitted → InputsStaged) plus, per attempt, the agent fetching them (JobPlaced → ComputeHeld). Never billed.
    "queuedMs": NotRequired[int],  # Waiting for GPUs: InputsStaged → first JobPlaced, plus JobRequeued → next JobPlaced. Never billed.
    "heldMs": NotRequired[int],  # GPUs held: ComputeHeld → JobFinished, summed over attempts (agent clock). The billable span, before waivers; contains runningMs.
    "runningMs": NotRequired[int],  # The process ran: JobStarted → JobFinished, summed over attempts (agent clock).
    "outputMs": NotRequired[int],  # Outputs stored: JobFinished → OutputsStored. Never billed.
    "releaseMs": NotRequired[int],  # GPUs freed: OutputsStored (or JobFinished) → ComputeReleased. Never billed.
})

# One node and its GPU ids.
AuditJobReplyJob1AttemptsItemNodesItem = TypedDict("AuditJobReplyJob1AttemptsItemNodesItem", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuIndices": List[int],  # GPU indices on the node, each once; the job sees them through `CUDA_VISIBLE_DEVICES`.
})

# Integer milliseconds per phase; a phase that did not happen (yet) is absent. Spans across services mix clocks (placement vs agent); negative spans count 0.
AuditJobReplyJob1AttemptsItemDurations = TypedDict("AuditJobReplyJob1AttemptsItemDurations", {
    "stagingMs": NotRequired[int],  # Inputs staged by storage (JobSubmitted → InputsStaged) plus, per attempt, the agent fetching them (JobPlaced → ComputeHeld). Never billed.
    "queuedMs": NotRequired[int],  # Waiting for GPUs: InputsStaged → first JobPlaced, plus JobRequeued → next JobPlaced. Never billed.
    "heldMs": NotRequired[int],  # GPUs held: ComputeHeld → JobFinished, summed over attempts (agent clock). The billable span, before waivers; contains runningMs.
    "runningMs": NotRequired[int],  # The process ran: JobStarted → JobFinished, summed over attempts (agent clock).
    "outputMs": NotRequired[int],  # Outputs stored: JobFinished → OutputsStored. Never billed.
    "releaseMs": NotRequired[int],  # GPUs freed: OutputsStored (or JobFinished) → ComputeReleased. Never billed.
})

# One run attempt.
AuditJobReplyJob1AttemptsItem = TypedDict("AuditJobReplyJob1AttemptsItem", {
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "attempt": int,  # Attempt number, 1 first.
    "nodeId": str,  # Node of rank 0.
    "nodes": List[AuditJobReplyJob1AttemptsItemNodesItem],  # Every node of the attempt with its GPU ids (one unless a gang).
    "gpuIndices": List[int],  # GPU ids on the rank-0 node.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": int,  # GPUs held over every node (0 when never held).
    "placedAt": str,  # When placement chose the node(s).
    "heldAt": NotRequired[str],  # When the GPUs were held (agent clock; the earliest node of a gang).
    "startedAt": NotRequired[str],  # When the process started.
    "finishedAt": NotRequired[str],  # When the attempt ended.
    "releasedAt": NotRequired[str],  # When the last node freed its GPUs.
    "outcome": NotRequired[Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"]],  # How the attempt ended.
    "workDigest": NotRequired[str],  # What this attempt ran (JobStarted.work.digest), when its agent recorded it.
    "exitCode": NotRequired[Union[int, None]],  # Exit code, null when killed by a signal; absent until finished.
    "durations": AuditJobReplyJob1AttemptsItemDurations,  # Integer milliseconds per phase; a phase that did not happen (yet) is absent. Spans across services mix clocks (placement vs agent); negative spans count 0.
})

# One output file: where the job wrote it and its content address.
AuditJobReplyJob1OutputsFilesItem = TypedDict("AuditJobReplyJob1OutputsFilesItem", {
    "path": str,  # Path relative to `GPUNET_OUTPUT_DIR`, with `/` separators.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

AuditJobReplyJob1OutputsLogsItem = TypedDict("AuditJobReplyJob1OutputsLogsItem", {
    "stream": str,  # `stdout` or `stderr`.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

# What came back: files with size and sha256, and the captured logs (absent until OutputsStored).
AuditJobReplyJob1Outputs = TypedDict("AuditJobReplyJob1Outputs", {
    "files": List[AuditJobReplyJob1OutputsFilesItem],  # Stored output files.
    "totalBytes": int,  # Size in bytes.
    "truncated": bool,  # Files were skipped at maxBytes.
    "logs": List[AuditJobReplyJob1OutputsLogsItem],  # The run's captured stdout and stderr, stored like outputs.
})

AuditJobReplyJob1CostLinesItem = TypedDict("AuditJobReplyJob1CostLinesItem", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": int,  # GPUs held by the attempt.
    "outcome": Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"],  # How the attempt ended: `completed` (exit 0), `failed` (non-zero exit or could not start), `timeout` (time limit hit, killed), `cancelled` (on request), `node_lo
    "heldFrom": str,  # ComputeHeld.heldAt of the attempt (agent clock).
    "finishedAt": str,  # JobFinished.finishedAt of the attempt (same agent's clock).
    "billableMs": int,  # finishedAt − heldFrom in ms, never negative.
    "rateMicrosPerGpuHour": int,  # Rate applied, micro-units per GPU per hour.
    "amountMicros": int,  # Charge: gpus × billableMs × rate / 3,600,000, rounded once by the rounding rule; 0 when waived.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "priceListVersion": int,  # Version of the price list the rate came from.
    "rounding": str,  # Name of the rounding rule applied, e.g. `per-line-half-up-micros` (exact value, then half up, once per line).
    "waivedReason": NotRequired[Literal["platform_fault"]],  # Present when the attempt is not charged: `platform_fault` (e.g. node lost). amountMicros is then 0.
    "recordedAt": str,  # When the ledger computed the line.
})

AuditJobReplyJob1CostTotalsItem = TypedDict("AuditJobReplyJob1CostTotalsItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
})

# What it cost.
AuditJobReplyJob1Cost = TypedDict("AuditJobReplyJob1Cost", {
    "lines": List[AuditJobReplyJob1CostLinesItem],  # The ledger's usage lines of the job, one per attempt that held compute.
    "totals": List[AuditJobReplyJob1CostTotalsItem],  # Sum per currency.
    "billableMs": int,  # Sum of the lines' billableMs.
})

# The job's JobEnded, once recorded: nothing more happened to it after; `outcome` is then its outcome (`staging_failed` for a failed staging).
AuditJobReplyJob1Ended = TypedDict("AuditJobReplyJob1Ended", {
    "endedAt": str,  # JobEnded.endedAt: when the ledger found the job over.
    "eventId": str,  # Id of the JobEnded event (its place is in `timeline`).
})

# One event of the job.
AuditJobReplyJob1TimelineItem = TypedDict("AuditJobReplyJob1TimelineItem", {
    "position": str,  # Global position in the event store (decimal).
    "streamId": str,  # The stream it is in, e.g. `intake-job-<jobId>`.
    "revision": str,  # Revision in its stream (decimal).
    "eventId": str,  # The event's id.
    "type": str,  # Event type, e.g. `JobStarted`.
    "producer": str,  # The service that recorded it.
    "at": str,  # When the producer observed or decided it (its clock).
    "recordedAt": str,  # When the store recorded it.
    "attemptId": NotRequired[str],  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "nodeId": NotRequired[str],  # Execution node (one agent process) id, e.g. `node-a100-01`.
})

# Everything the event store says about one job.
AuditJobReplyJob1 = TypedDict("AuditJobReplyJob1", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "name": NotRequired[str],  # The spec's label, if any.
    "submittedAt": str,  # UTC instant, ISO-8601 with `Z`.
    "submittedBy": NotRequired[str],  # Id of the API key that submitted it.
    "outcome": Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline", "rejected", "staging_failed", "open"],  # The last attempt's outcome (`completed`, `failed`, `timeout`, `cancelled`, `node_lost`); `deadline` or `cancelled` for a job withdrawn from the queue; `rejected
    "work": AuditJobReplyJob1Work,  # What ran.
    "durations": AuditJobReplyJob1Durations,  # Integer milliseconds per phase; a phase that did not happen (yet) is absent. Spans across services mix clocks (placement vs agent); negative spans count 0.
    "attempts": List[AuditJobReplyJob1AttemptsItem],  # Run attempts, first first.
    "outputs": NotRequired[AuditJobReplyJob1Outputs],  # What came back: files with size and sha256, and the captured logs (absent until OutputsStored).
    "cost": AuditJobReplyJob1Cost,  # What it cost.
    "ended": NotRequired[AuditJobReplyJob1Ended],  # The job's JobEnded, once recorded: nothing more happened to it after; `outcome` is then its outcome (`staging_failed` for a failed staging).
    "timeline": List[AuditJobReplyJob1TimelineItem],  # Every event of the job from every service, in store order.
})

# One job's audit.
AuditJobReply = TypedDict("AuditJobReply", {
    "job": Union[AuditJobReplyJob1, None],  # null when the store holds no such job (or, for a team key, none of its team).
    "asOfPosition": str,  # The answer holds every event up to this global position of the store (decimal).
    "recordedAs": str,  # Id of the AuditQueried event that records this query.
})

# Who asks: set by intake from the caller's key; the subject accepts only intake (and the operator). Never copied from a request body.
AuditJobsRequester = TypedDict("AuditJobsRequester", {
    "keyId": str,  # Id of the API key that asked (never the key itself).
    "team": str,  # The key's team.
    "role": str,  # The key's role, e.g. `producer`, `billing`, `compliance`.
    "allTeams": bool,  # True when the answer may cover every team (a compliance key's audit, or the operator); false confines it to `team`.
})

# Which jobs to list; every given field must match.
AuditJobsFilter = TypedDict("AuditJobsFilter", {
    "team": NotRequired[str],  # Only this team's jobs. A team key may name only its own team.
    "from": NotRequired[str],  # Only jobs submitted at or after this time.
    "to": NotRequired[str],  # Only jobs submitted before this time.
    "nodeId": NotRequired[str],  # Only jobs with an attempt on this node.
    "gpuModel": NotRequired[str],  # Only jobs with an attempt on this GPU model.
    "outcome": NotRequired[Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline", "rejected", "staging_failed", "open"]],  # Only jobs that ended this way.
    "limit": NotRequired[int],  # Most jobs in this answer, oldest first, 1–1000. Default 500.
    "offset": NotRequired[int],  # Matching jobs to skip (oldest first): the next page starts at offset + limit. Default 0.
})

# Jobs for an audit, filtered by team, time range, node, GPU model and outcome (behind `GET /v1/audit/jobs`). Subject: `gpunet.qry.ledger.AuditJobs`. Schema version 1.
AuditJobs = TypedDict("AuditJobs", {
    "requester": AuditJobsRequester,  # Who asks: set by intake from the caller's key; the subject accepts only intake (and the operator). Never copied from a request body.
    "filter": AuditJobsFilter,  # Which jobs to list; every given field must match.
})

# Integer milliseconds per phase; a phase that did not happen (yet) is absent. Spans across services mix clocks (placement vs agent); negative spans count 0.
AuditJobsReplyJobsItemDurations = TypedDict("AuditJobsReplyJobsItemDurations", {
    "stagingMs": NotRequired[int],  # Inputs staged by storage (JobSubmitted → InputsStaged) plus, per attempt, the agent fetching them (JobPlaced → ComputeHeld). Never billed.
    "queuedMs": NotRequired[int],  # Waiting for GPUs: InputsStaged → first JobPlaced, plus JobRequeued → next JobPlaced. Never billed.
    "heldMs": NotRequired[int],  # GPUs held: ComputeHeld → JobFinished, summed over attempts (agent clock). The billable span, before waivers; contains runningMs.
    "runningMs": NotRequired[int],  # The process ran: JobStarted → JobFinished, summed over attempts (agent clock).
    "outputMs": NotRequired[int],  # Outputs stored: JobFinished → OutputsStored. Never billed.
    "releaseMs": NotRequired[int],  # GPUs freed: OutputsStored (or JobFinished) → ComputeReleased. Never billed.
})

# Stored output files and their total size (0 until stored).
AuditJobsReplyJobsItemOutputs = TypedDict("AuditJobsReplyJobsItemOutputs", {
    "files": int,  # Number of files.
    "totalBytes": int,  # Size in bytes.
})

AuditJobsReplyJobsItemTotalsItem = TypedDict("AuditJobsReplyJobsItemTotalsItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
})

# One job of an audit list.
AuditJobsReplyJobsItem = TypedDict("AuditJobsReplyJobsItem", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "name": NotRequired[str],  # The spec's label, if any.
    "submittedAt": str,  # UTC instant, ISO-8601 with `Z`.
    "outcome": Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline", "rejected", "staging_failed", "open"],  # The last attempt's outcome (`completed`, `failed`, `timeout`, `cancelled`, `node_lost`); `deadline` or `cancelled` for a job withdrawn from the queue; `rejected
    "attempts": int,  # Run attempts placed.
    "nodes": List[str],  # Nodes of every attempt, in order of first use.
    "gpuModels": List[str],  # GPU models of every attempt.
    "gpus": int,  # GPUs requested.
    "durations": AuditJobsReplyJobsItemDurations,  # Integer milliseconds per phase; a phase that did not happen (yet) is absent. Spans across services mix clocks (placement vs agent); negative spans count 0.
    "outputs": AuditJobsReplyJobsItemOutputs,  # Stored output files and their total size (0 until stored).
    "billableMs": int,  # Sum of the usage lines' billableMs.
    "totals": List[AuditJobsReplyJobsItemTotalsItem],  # Charge per currency.
})

# Jobs for an audit.
AuditJobsReply = TypedDict("AuditJobsReply", {
    "jobs": List[AuditJobsReplyJobsItem],  # Matching jobs, oldest submission first.
    "total": int,  # Matching jobs before offset and limit; more pages follow while offset + jobs.length < total.
    "asOfPosition": str,  # The answer holds every event up to this global position of the store (decimal).
    "recordedAs": str,  # Id of the AuditQueried event that records this query.
})

# Who asks: set by intake from the caller's key; the subject accepts only intake (and the operator). Never copied from a request body.
AuditQueriedDataRequestedBy = TypedDict("AuditQueriedDataRequestedBy", {
    "keyId": str,  # Id of the API key that asked (never the key itself).
    "team": str,  # The key's team.
    "role": str,  # The key's role, e.g. `producer`, `billing`, `compliance`.
    "allTeams": bool,  # True when the answer may cover every team (a compliance key's audit, or the operator); false confines it to `team`.
})

# Someone asked an audit query: who (API key, team, role), what (query and parameters), when, and whether it was refused. Recorded before the answer is given.
AuditQueriedData = TypedDict("AuditQueriedData", {
    "query": Literal["AuditJobs", "AuditJob"],  # Which audit query.
    "parameters": Dict[str, Any],  # What was asked: the filter of AuditJobs, `{ jobId }` of AuditJob.
    "requestedBy": AuditQueriedDataRequestedBy,  # Who asks: set by intake from the caller's key; the subject accepts only intake (and the operator). Never copied from a request body.
    "correlationId": NotRequired[str],  # The request's correlation id, to find it in the logs.
    "askedAt": str,  # When the ledger took the query (its clock), before answering it.
    "refused": NotRequired[str],  # Why the query was refused (e.g. a team key naming another team); absent when it was answered.
})

# Metadata every event carries; covered by the hash chain.
AuditQueriedMetadata = TypedDict("AuditQueriedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# Someone asked an audit query: who (API key, team, role), what (query and parameters), when, and whether it was refused. Recorded before the answer is given. Subject: `gpunet.evt.AuditQueried.*.*`. Schema version 1.
AuditQueried = TypedDict("AuditQueried", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["AuditQueried"],  # Always `AuditQueried`.
    "data": AuditQueriedData,  # Someone asked an audit query: who (API key, team, role), what (query and parameters), when, and whether it was refused. Recorded before the answer is given.
    "metadata": AuditQueriedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

BlobObjectRecordOptions = TypedDict("BlobObjectRecordOptions", {
    "max_chunk_size": NotRequired[int],
})

# The Object Store record of a blob, on `$O.gpunet-blobs-<team>.M.<base64url(name)>`.
BlobObjectRecord = TypedDict("BlobObjectRecord", {
    "name": str,  # `<team>/<sha256>`.
    "bucket": str,  # `gpunet-blobs-<team>`.
    "nuid": str,  # Chunks are on `$O.<bucket>.C.<nuid>`.
    "size": int,  # Bytes (0 once deleted).
    "chunks": int,  # Chunks (0 once deleted).
    "digest": str,  # `SHA-256=<padded base64url of the sha256>` (empty once deleted).
    "mtime": str,  # When the record was written (ISO-8601).
    "deleted": NotRequired[bool],  # True once the object is removed (its chunks are purged).
    "description": NotRequired[str],
    "options": NotRequired[BlobObjectRecordOptions],
})

# The API key that made the change (its id and team), never the key itself.
BudgetClearedDataClearedBy = TypedDict("BudgetClearedDataClearedBy", {
    "keyId": str,  # Id of the acting API key (never the key itself).
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# A team's budget was removed (role `billing`): its jobs are no longer checked.
BudgetClearedData = TypedDict("BudgetClearedData", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "clearedBy": BudgetClearedDataClearedBy,  # The API key that made the change (its id and team), never the key itself.
    "clearedAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# Metadata every event carries; covered by the hash chain.
BudgetClearedMetadata = TypedDict("BudgetClearedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A team's budget was removed (role `billing`): its jobs are no longer checked. Subject: `gpunet.evt.BudgetCleared.*.*`. Schema version 1.
BudgetCleared = TypedDict("BudgetCleared", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["BudgetCleared"],  # Always `BudgetCleared`.
    "data": BudgetClearedData,  # A team's budget was removed (role `billing`): its jobs are no longer checked.
    "metadata": BudgetClearedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# A submit was refused because its worst case would take the team past its budget; the figures as decided.
BudgetRefusedData = TypedDict("BudgetRefusedData", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "worstCaseMicros": int,  # The job's charge at most: gpus × time limit × rate, priced by the ledger's rule (`gpunet.qry.ledger.Quote`).
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "gpus": int,  # Number of GPUs, a whole number ≥ 1.
    "timeLimitMs": int,  # Duration in whole milliseconds.
    "rateMicrosPerGpuHour": int,  # The rate the worst case was priced at (the highest of the list when the job names no GPU model).
    "priceListVersion": int,  # The price list version the rate comes from.
    "monthlyMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "spentMicros": int,  # Charged this month by jobs that ended, when refused.
    "reservedMicros": int,  # Worst cases of the team's jobs that had not ended, when refused.
    "refusedAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# Metadata every event carries; covered by the hash chain.
BudgetRefusedMetadata = TypedDict("BudgetRefusedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A submit was refused because its worst case would take the team past its budget; the figures as decided. Subject: `gpunet.evt.BudgetRefused.*.*`. Schema version 1.
BudgetRefused = TypedDict("BudgetRefused", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["BudgetRefused"],  # Always `BudgetRefused`.
    "data": BudgetRefusedData,  # A submit was refused because its worst case would take the team past its budget; the figures as decided.
    "metadata": BudgetRefusedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# A job ended: its reservation is replaced by what it was billed.
BudgetReleasedData = TypedDict("BudgetReleasedData", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "reservedMicros": int,  # The worst case that was reserved.
    "chargedMicros": int,  # What the job was billed (its `JobEnded` total in the budget's currency): it counts as spent this month from now.
    "releasedAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# Metadata every event carries; covered by the hash chain.
BudgetReleasedMetadata = TypedDict("BudgetReleasedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A job ended: its reservation is replaced by what it was billed. Subject: `gpunet.evt.BudgetReleased.*.*`. Schema version 1.
BudgetReleased = TypedDict("BudgetReleased", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["BudgetReleased"],  # Always `BudgetReleased`.
    "data": BudgetReleasedData,  # A job ended: its reservation is replaced by what it was billed.
    "metadata": BudgetReleasedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# A submitted job's worst-case charge was reserved in its team's budget (recorded before its JobSubmitted); `held` when it waits for the budget.
BudgetReservedData = TypedDict("BudgetReservedData", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "worstCaseMicros": int,  # The job's charge at most: gpus × time limit × rate, priced by the ledger's rule (`gpunet.qry.ledger.Quote`).
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "gpus": int,  # Number of GPUs, a whole number ≥ 1.
    "timeLimitMs": int,  # Duration in whole milliseconds.
    "rateMicrosPerGpuHour": int,  # The rate the worst case was priced at (the highest of the list when the job names no GPU model).
    "priceListVersion": int,  # The price list version the rate comes from.
    "held": bool,  # True when the team's budget says `hold` and the job did not fit when submitted: it waits in the queue (reason `BudgetExceeded`) until the reservations before it
    "reservedAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# Metadata every event carries; covered by the hash chain.
BudgetReservedMetadata = TypedDict("BudgetReservedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A submitted job's worst-case charge was reserved in its team's budget (recorded before its JobSubmitted); `held` when it waits for the budget. Subject: `gpunet.evt.BudgetReserved.*.*`. Schema version 1.
BudgetReserved = TypedDict("BudgetReserved", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["BudgetReserved"],  # Always `BudgetReserved`.
    "data": BudgetReservedData,  # A submitted job's worst-case charge was reserved in its team's budget (recorded before its JobSubmitted); `held` when it waits for the budget.
    "metadata": BudgetReservedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# The API key that made the change (its id and team), never the key itself.
BudgetSetDataSetBy = TypedDict("BudgetSetDataSetBy", {
    "keyId": str,  # Id of the acting API key (never the key itself).
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# A team's monthly budget was set (role `billing`): amount, currency, refuse or hold, soft thresholds, who and when.
BudgetSetData = TypedDict("BudgetSetData", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "monthlyMicros": int,  # What the team may commit per UTC month (spent + reserved), in micro-units of `currency`.
    "currency": str,  # The price list's currency the amount is in.
    "onExceed": Literal["refuse", "hold"],  # What a submit that would take the team past its budget gets: `refuse` (an error naming the figures; the default) or `hold` (accepted, waits in the queue with re
    "thresholdsPercent": List[int],  # Soft thresholds, ascending, in percent.
    "setBy": BudgetSetDataSetBy,  # The API key that made the change (its id and team), never the key itself.
    "setAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# Metadata every event carries; covered by the hash chain.
BudgetSetMetadata = TypedDict("BudgetSetMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A team's monthly budget was set (role `billing`): amount, currency, refuse or hold, soft thresholds, who and when. Subject: `gpunet.evt.BudgetSet.*.*`. Schema version 1.
BudgetSet = TypedDict("BudgetSet", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["BudgetSet"],  # Always `BudgetSet`.
    "data": BudgetSetData,  # A team's monthly budget was set (role `billing`): amount, currency, refuse or hold, soft thresholds, who and when.
    "metadata": BudgetSetMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# The team's committed spend this month (spent + reserved) reached a soft threshold of its budget; on the team feed of the job that crossed it.
BudgetThresholdCrossedData = TypedDict("BudgetThresholdCrossedData", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "jobId": NotRequired[str],  # The job whose reservation crossed it.
    "month": str,  # UTC month, `YYYY-MM`.
    "thresholdPercent": int,  # The threshold crossed, in percent of the monthly amount.
    "committedMicros": int,  # Spent this month + reserved, when crossed.
    "monthlyMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "crossedAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# Metadata every event carries; covered by the hash chain.
BudgetThresholdCrossedMetadata = TypedDict("BudgetThresholdCrossedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The team's committed spend this month (spent + reserved) reached a soft threshold of its budget; on the team feed of the job that crossed it. Subject: `gpunet.evt.BudgetThresholdCrossed.*.*`. Schema version 1.
BudgetThresholdCrossed = TypedDict("BudgetThresholdCrossed", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["BudgetThresholdCrossed"],  # Always `BudgetThresholdCrossed`.
    "data": BudgetThresholdCrossedData,  # The team's committed spend this month (spent + reserved) reached a soft threshold of its budget; on the team feed of the job that crossed it.
    "metadata": BudgetThresholdCrossedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# Cancel one of the caller's jobs. Cancelling an ended job is not an error: the reply says nothing changed. Subject: `gpunet.cmd.CancelJob`. Schema version 1.
CancelJob = TypedDict("CancelJob", {
    "jobId": str,  # The job to cancel, e.g. `job_01jz8k4m2n`.
    "reason": NotRequired[str],  # Why, kept in the job's history.
})

# Where the job stands after the request.
CancelJobReply = TypedDict("CancelJobReply", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "state": Literal["submitted", "staged", "placed", "running", "finishing", "completed", "failed", "timeout", "cancelled", "node_lost", "deadline", "rejected"],  # `submitted`: waiting for inputs to stage; `staged`: waiting for a node; `placed`: GPUs chosen or held; `running`: the process runs; `finishing`: ended, outputs 
    "cancelRequested": bool,  # False when the job had already ended; nothing changed then.
})

# Free GPUs per GPU model per hour ahead, from the live plan (for `gpunet capacity` via `GET /v1/capacity`). Subject: `gpunet.qry.placement.Capacity`. Schema version 1.
Capacity = TypedDict("Capacity", {
    "hours": NotRequired[int],  # Hours ahead, 1–168. Default 24.
})

CapacityReplyTotalsItem = TypedDict("CapacityReplyTotalsItem", {
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": int,  # GPUs of that model.
})

CapacityReplyHoursItemFreeItem = TypedDict("CapacityReplyHoursItemFreeItem", {
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": int,  # GPUs of that model.
})

CapacityReplyHoursItem = TypedDict("CapacityReplyHoursItem", {
    "start": str,  # Start of the hour.
    "free": List[CapacityReplyHoursItemFreeItem],  # GPUs of each model that nothing in the plan touches during the whole hour (running work to its time limit, planned starts, reservations).
})

# How honest recent quotes were: start times quoted by status and estimates against the actual starts, and deadlines kept.
CapacityReplyQuotes = TypedDict("CapacityReplyQuotes", {
    "since": str,  # Start of the window: jobs started (or withdrawn at their deadline) since then count.
    "started": int,  # Jobs that started in the window with a start quoted before.
    "medianStartErrorMs": NotRequired[int],  # Median of (actual start − quoted start), ms: positive when jobs started later than quoted.
    "p90StartErrorMs": NotRequired[int],  # 90th percentile of the absolute start error, ms.
    "ended": NotRequired[int],  # Jobs that completed in the window with an end quoted before (the estimate they were submitted on, or their deadline accepted on).
    "medianEndErrorMs": NotRequired[int],  # Median of (actual end − quoted end), ms: negative when jobs ended earlier than quoted (a quoted end runs to the time limit).
    "p90EndErrorMs": NotRequired[int],  # 90th percentile of the absolute end error, ms.
    "deadlinesAccepted": int,  # Jobs with a deadline (accepted at submit) that ended in the window.
    "deadlinesMet": int,  # Of those, the ones that finished by their deadline.
})

# One team's quota for one GPU model, and its use.
CapacityReplyQuotasListItem = TypedDict("CapacityReplyQuotasListItem", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": Union[int, None],  # Concurrent GPU quota; null: no limit.
    "gpuHours": Union[int, None],  # GPU-hours per month; null: no limit.
    "borrow": bool,  # Whether the team may borrow idle GPUs past `gpus`.
    "inUse": int,  # GPUs of the model the team's attempts hold now (placed until released), borrowed ones included.
    "borrowed": int,  # Of those, GPUs held by attempts placed as borrowed (past the quota).
    "heldMs": int,  # GPU-ms of the model the team's attempts held this month (UTC) so far, running ones up to now.
    "waiting": int,  # The team's queued jobs of the model held back by this quota now.
    "setAt": NotRequired[str],  # When the quota was set; absent for a team with usage but no quota.
})

# GPU quotas per team and model with their use (the caller's team only, unless its key is `billing`); added by intake.
CapacityReplyQuotas = TypedDict("CapacityReplyQuotas", {
    "month": str,  # A calendar month (UTC), e.g. `2026-12`.
    "list": List[CapacityReplyQuotasListItem],  # By team, then model.
})

# The capacity forecast.
CapacityReply = TypedDict("CapacityReply", {
    "totals": List[CapacityReplyTotalsItem],  # GPUs of each model on registered nodes.
    "hours": List[CapacityReplyHoursItem],  # One entry per hour, from now.
    "at": str,  # The plan time this answer is for.
    "quotes": NotRequired[CapacityReplyQuotes],  # How honest recent quotes were: start times quoted by status and estimates against the actual starts, and deadlines kept.
    "quotas": NotRequired[CapacityReplyQuotas],  # GPU quotas per team and model with their use (the caller's team only, unless its key is `billing`); added by intake.
})

# A stream's head as of a position.
ChainHeadsSignedDataHeadsItem = TypedDict("ChainHeadsSignedDataHeadsItem", {
    "streamId": str,  # Event store stream id, e.g. `execution-node-1-attempt-job_01-a1`.
    "revision": str,  # Last revision of the stream at or before the digest position.
    "position": str,  # Global position of that event.
    "hash": str,  # Its chain hash.
})

# Signed chain heads: every stream head as of a store position (changed ones listed, all in a Merkle root), chained to the previous digest and signed with the network signing key (ed25519).
ChainHeadsSignedData = TypedDict("ChainHeadsSignedData", {
    "format": Literal["gpunet.chain-digest/2", "gpunet.chain-digest/1"],  # `gpunet.chain-digest/2` for every digest signed now; `gpunet.chain-digest/1` (leaves sorted by stream id) in stores signed before it, still checked.
    "sequence": int,  # 1 for the first digest of the store, then +1.
    "position": str,  # Store position covered: every event at or before it.
    "previousPosition": str,  # Position of the previous digest (`0` for the first).
    "previousDigestHash": str,  # `digestHash` of the previous digest (64 zeros for the first): digests chain too.
    "streams": int,  # How many streams the store held at `position`.
    "headsRoot": str,  # Merkle root over every stream head at `position` (leaf = sha256(0x00 ‖ canonical [streamId, revision, position, hash]), node = sha256(0x01 ‖ left ‖ right), an o
    "heads": List[ChainHeadsSignedDataHeadsItem],  # The heads that changed since the previous digest, sorted by stream id (all of them in the first digest).
    "signedAt": str,  # When the notary signed (its clock).
    "publicKey": str,  # NKey public key (ed25519) of the signing key.
    "signature": str,  # base64url ed25519 signature over the canonical JSON of every other field.
})

# Metadata every event carries; covered by the hash chain.
ChainHeadsSignedMetadata = TypedDict("ChainHeadsSignedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# Signed chain heads: every stream head as of a store position (changed ones listed, all in a Merkle root), chained to the previous digest and signed with the network signing key (ed25519). Subject: `gpunet.evt.ChainHeadsSigned.*.*`. Schema version 1.
ChainHeadsSigned = TypedDict("ChainHeadsSigned", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["ChainHeadsSigned"],  # Always `ChainHeadsSigned`.
    "data": ChainHeadsSignedData,  # Signed chain heads: every stream head as of a store position (changed ones listed, all in a Merkle root), chained to the previous digest and signed with the net
    "metadata": ChainHeadsSignedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# A node asks storage to take a checkpoint from its bucket into the team's, on `gpunet.data.<nodeId>.checkpoint`.
CheckpointFromNode = TypedDict("CheckpointFromNode", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "sha256": str,  # The checkpoint's folder manifest, written by the node into its own bucket with its files.
})

# Reply to CheckpointFromNode: what storage took into the team's bucket.
CheckpointFromNodeReply = TypedDict("CheckpointFromNodeReply", {
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "files": int,
    "copiedBytes": int,  # Bytes copied into the team's bucket (files it held already are not copied).
})

# Remove a team's budget (role `billing`). Same as `DELETE /v1/budgets/{team}`. Subject: `gpunet.cmd.ClearBudget`. Schema version 1.
ClearBudget = TypedDict("ClearBudget", {
    "team": NotRequired[str],  # Default: the caller's team.
})

# The API key that made the change (its id and team), never the key itself.
ClearBudgetReplyBudgetSetBy = TypedDict("ClearBudgetReplyBudgetSetBy", {
    "keyId": str,  # Id of the acting API key (never the key itself).
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# The budget in force; absent: none (jobs are not checked).
ClearBudgetReplyBudget = TypedDict("ClearBudgetReplyBudget", {
    "monthlyMicros": int,  # What the team may commit per UTC month (spent + reserved), in micro-units of `currency`.
    "currency": str,  # The price list's currency the amount is in.
    "onExceed": Literal["refuse", "hold"],  # What a submit that would take the team past its budget gets: `refuse` (an error naming the figures; the default) or `hold` (accepted, waits in the queue with re
    "thresholdsPercent": List[int],  # Soft thresholds, ascending, in percent.
    "setBy": ClearBudgetReplyBudgetSetBy,  # The API key that made the change (its id and team), never the key itself.
    "setAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# A team's budget and where it stands this month.
ClearBudgetReply = TypedDict("ClearBudgetReply", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "month": str,  # The UTC month of the figures, `YYYY-MM`.
    "budget": NotRequired[ClearBudgetReplyBudget],  # The budget in force; absent: none (jobs are not checked).
    "spentMicros": int,  # Billed this month for jobs that ended.
    "reservedMicros": int,  # Worst cases of jobs that have not ended.
    "remainingMicros": int,  # monthly − spent − reserved; negative when held jobs wait beyond the budget. Absent budget: 0.
    "heldJobs": List[str],  # Reserved jobs that have not run and do not fit the budget now, in order: they wait in the queue with reason `BudgetExceeded`.
    "thresholdsCrossed": List[int],  # Thresholds crossed this month.
    "revision": str,  # Revision of the budget stream the figures are at (`-1`: nothing recorded).
})

# The agent reserved the GPUs for the attempt. Billable time starts at heldAt.
ComputeHeldData = TypedDict("ComputeHeldData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuIndices": List[int],  # GPU indices on the node, each once; the job sees them through `CUDA_VISIBLE_DEVICES`.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": int,  # Number of GPUs held; equals the length of gpuIndices.
    "heldAt": str,  # Agent clock: when the GPUs were reserved for the job. Billing starts here.
})

# Metadata every event carries; covered by the hash chain.
ComputeHeldMetadata = TypedDict("ComputeHeldMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The agent reserved the GPUs for the attempt. Billable time starts at heldAt. Subject: `gpunet.evt.ComputeHeld.*.*`. Schema version 1.
ComputeHeld = TypedDict("ComputeHeld", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["ComputeHeld"],  # Always `ComputeHeld`.
    "data": ComputeHeldData,  # The agent reserved the GPUs for the attempt. Billable time starts at heldAt.
    "metadata": ComputeHeldMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# The agent freed the attempt's GPUs; they may be placed again.
ComputeReleasedData = TypedDict("ComputeReleasedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuIndices": List[int],  # GPU indices on the node, each once; the job sees them through `CUDA_VISIBLE_DEVICES`.
    "releasedAt": str,  # Agent clock: when the GPUs became free again.
})

# Metadata every event carries; covered by the hash chain.
ComputeReleasedMetadata = TypedDict("ComputeReleasedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The agent freed the attempt's GPUs; they may be placed again. Subject: `gpunet.evt.ComputeReleased.*.*`. Schema version 1.
ComputeReleased = TypedDict("ComputeReleased", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["ComputeReleased"],  # Always `ComputeReleased`.
    "data": ComputeReleasedData,  # The agent freed the attempt's GPUs; they may be placed again.
    "metadata": ComputeReleasedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# Operator: place nothing new on this node (NodeCordoned); running attempts continue. Subject: `gpunet.cmd.CordonNode`. Schema version 1.
CordonNode = TypedDict("CordonNode", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "reason": str,  # Why, for the record.
    "by": NotRequired[str],  # Who does it, for the record (`operator <user>`); intake sets it from the operator's key.
})

# The operator's cordon or drain in force, with who, why and when.
CordonNodeReplyNodeAdmin = TypedDict("CordonNodeReplyNodeAdmin", {
    "state": Literal["cordoned", "draining", "drained"],  # Cordoned, or draining until NodeDrained, then drained.
    "by": str,  # The operator who did it.
    "reason": str,  # Why, in the operator's words.
    "at": str,  # When it was recorded (placement clock).
    "drainedAt": NotRequired[str],  # When the drain completed (NodeDrained).
})

# The node as it now stands.
CordonNodeReplyNode = TypedDict("CordonNodeReplyNode", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "state": Literal["ready", "cordoned", "draining", "drained", "lost", "offline"],  # ready, cordoned, draining, drained, lost or offline (see NODE_STATES).
    "hostname": NotRequired[str],  # Host name the agent registered with.
    "gpus": int,  # GPUs (or declared slots) the node offers.
    "gpusHeld": int,  # GPUs held by attempts now.
    "gpuModels": List[str],  # The models of its GPUs.
    "runningAttempts": int,  # Attempts holding GPUs on the node (placed, not yet released).
    "lastHeartbeatAt": NotRequired[str],  # Placement clock: when its last heartbeat arrived (this placement process).
    "heartbeatAgeMs": NotRequired[int],  # How long ago, at `at` of the reply.
    "leaseMs": NotRequired[int],  # Silence longer than this and the node is declared lost.
    "registeredAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "lostAt": NotRequired[str],  # When placement declared it lost (while it has not registered again).
    "admin": NotRequired[CordonNodeReplyNodeAdmin],  # The operator's cordon or drain in force, with who, why and when.
})

# Reply to CordonNode.
CordonNodeReply = TypedDict("CordonNodeReply", {
    "node": CordonNodeReplyNode,  # The node as it now stands.
    "changed": bool,  # False when the node already was so: nothing was recorded.
    "event": NotRequired[str],  # The event recorded, when one was.
})

# Issue an API key; the reply holds the key, once (role `operator`, or `admin` for its own team). Same as `POST /v1/keys`. Subject: `gpunet.cmd.CreateApiKey`. Schema version 1.
CreateApiKey = TypedDict("CreateApiKey", {
    "team": NotRequired[str],  # The key's team; it must exist and not be disabled. Default: the caller's team.
    "role": Literal["producer", "compliance", "billing", "admin", "operator"],  # `producer`: submits and reads its team's jobs; `compliance`: reads, and audits every team; `billing`: charges, invoices, price lists; `admin`: everything within
    "name": NotRequired[str],  # A label for people, e.g. `ci-nightly`.
    "expiresAt": NotRequired[str],  # Refuse the key from this time on (must be in the future); absent: until revoked.
})

# The API key that made the change (its id and team), never the key itself.
CreateApiKeyReplyIssuedBy = TypedDict("CreateApiKeyReplyIssuedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# The API key that made the change (its id and team), never the key itself.
CreateApiKeyReplyRevokedBy = TypedDict("CreateApiKeyReplyRevokedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# Present when the key is revoked.
CreateApiKeyReplyRevoked = TypedDict("CreateApiKeyReplyRevoked", {
    "by": CreateApiKeyReplyRevokedBy,  # The API key that made the change (its id and team), never the key itself.
    "at": str,  # UTC instant, ISO-8601 with `Z`.
    "reason": NotRequired[str],  # Why, as recorded.
})

# The issued key: pass it as `Authorization: Bearer <apiKey>`.
CreateApiKeyReply = TypedDict("CreateApiKeyReply", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "role": Literal["producer", "compliance", "billing", "admin", "operator"],  # `producer`: submits and reads its team's jobs; `compliance`: reads, and audits every team; `billing`: charges, invoices, price lists; `admin`: everything within
    "name": NotRequired[str],  # The label given at issue.
    "source": Literal["events", "file"],  # `events`: issued with `CreateApiKey`; `file`: listed in the bootstrap key file.
    "issuedBy": NotRequired[CreateApiKeyReplyIssuedBy],  # The API key that made the change (its id and team), never the key itself.
    "issuedAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "expiresAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "revoked": NotRequired[CreateApiKeyReplyRevoked],  # Present when the key is revoked.
    "state": Literal["active", "revoked", "expired", "team_disabled"],  # Whether intake accepts it now.
    "apiKey": str,  # The key, shown this once: it is not stored anywhere (only its sha256), so keep it now.
})

# Create a team (role `operator`). Same as `POST /v1/teams`. Subject: `gpunet.cmd.CreateTeam`. Schema version 1.
CreateTeam = TypedDict("CreateTeam", {
    "team": str,  # The new team's id, e.g. `team-ml`: 1–64 letters, digits, `_` or `-`.
    "displayName": NotRequired[str],  # Name for people. Default: the id.
    "timeZone": NotRequired[str],  # IANA time zone for times shown to the team's people, e.g. `Europe/Berlin`.
    "contact": NotRequired[str],  # Who to reach about the team.
})

# The API key that made the change (its id and team), never the key itself.
CreateTeamReplyCreatedBy = TypedDict("CreateTeamReplyCreatedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# The API key that made the change (its id and team), never the key itself.
CreateTeamReplyDisabledBy = TypedDict("CreateTeamReplyDisabledBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# Present when the team is disabled.
CreateTeamReplyDisabled = TypedDict("CreateTeamReplyDisabled", {
    "by": CreateTeamReplyDisabledBy,  # The API key that made the change (its id and team), never the key itself.
    "at": str,  # UTC instant, ISO-8601 with `Z`.
    "reason": NotRequired[str],  # Why, as recorded.
})

# A team.
CreateTeamReply = TypedDict("CreateTeamReply", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "displayName": str,  # Name for people (the id when none was given).
    "timeZone": NotRequired[str],  # IANA time zone of the team, if set.
    "contact": NotRequired[str],  # Who to reach about the team, if set.
    "source": Literal["events", "file"],  # `events`: created with `CreateTeam`; `file`: named by a key of the bootstrap key file.
    "createdBy": NotRequired[CreateTeamReplyCreatedBy],  # The API key that made the change (its id and team), never the key itself.
    "createdAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "disabled": NotRequired[CreateTeamReplyDisabled],  # Present when the team is disabled.
    "activeKeys": int,  # Keys of the team that are neither revoked nor expired.
})

CreditNoteIssuedDataLinesItem = TypedDict("CreditNoteIssuedDataLinesItem", {
    "lineId": str,  # The invoice line credited.
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Amount credited (positive).
    "reason": Literal["platform_fault"],  # Why: `platform_fault` (the node was declared lost after the invoice was finalized).
    "eventIds": List[str],  # Events that call for the correction.
})

CreditNoteIssuedDataTotalsItem = TypedDict("CreditNoteIssuedDataTotalsItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
})

# One side of a double-entry posting.
CreditNoteIssuedDataPostingsItem = TypedDict("CreditNoteIssuedDataPostingsItem", {
    "account": str,  # `receivable:<team>` or `revenue:compute`.
    "side": Literal["debit", "credit"],  # `debit` or `credit`.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "ref": str,  # The invoice or credit note it posts.
})

# A correction to a finalized invoice: credited amounts referencing its lines, with double-entry postings.
CreditNoteIssuedData = TypedDict("CreditNoteIssuedData", {
    "creditNoteId": str,  # `<invoiceId>-cn<n>`, n from 1.
    "invoiceId": str,  # Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "derivedAtPosition": str,  # Store position the correction was derived at.
    "issuedAt": str,  # UTC instant, ISO-8601 with `Z`.
    "lines": List[CreditNoteIssuedDataLinesItem],  # The lines credited, each referencing an invoice line.
    "totals": List[CreditNoteIssuedDataTotalsItem],  # Credited per currency.
    "postings": List[CreditNoteIssuedDataPostingsItem],  # Debit revenue:compute, credit receivable:<team>, per currency.
})

# Metadata every event carries; covered by the hash chain.
CreditNoteIssuedMetadata = TypedDict("CreditNoteIssuedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A correction to a finalized invoice: credited amounts referencing its lines, with double-entry postings. Subject: `gpunet.evt.CreditNoteIssued.*.*`. Schema version 1.
CreditNoteIssued = TypedDict("CreditNoteIssued", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["CreditNoteIssued"],  # Always `CreditNoteIssued`.
    "data": CreditNoteIssuedData,  # A correction to a finalized invoice: credited amounts referencing its lines, with double-entry postings.
    "metadata": CreditNoteIssuedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# A blob in the object store, by content address.
DataRemovedDataBlobsItem = TypedDict("DataRemovedDataBlobsItem", {
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

# Blobs were removed because no job needs them and their retention passed (or a node cache evicted them).
DataRemovedData = TypedDict("DataRemovedData", {
    "jobId": NotRequired[str],  # The job the data belonged to; absent for a cache eviction serving many jobs.
    "scope": Literal["inputs", "outputs", "checkpoints", "logs", "node_cache"],  # Which kind of data: a job's staged inputs, outputs, checkpoints, logs, or a node's local cache.
    "nodeId": NotRequired[str],  # The node whose local copy was removed; absent for the shared object store.
    "blobs": List[DataRemovedDataBlobsItem],  # Blobs removed.
    "reason": Literal["job_released", "retention_expired", "evicted"],  # `job_released`: no job needs it after release; `retention_expired`: its keep time passed; `evicted`: cache space was needed.
    "removedAt": str,  # When the data was removed.
})

# Metadata every event carries; covered by the hash chain.
DataRemovedMetadata = TypedDict("DataRemovedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# Blobs were removed because no job needs them and their retention passed (or a node cache evicted them). Subject: `gpunet.evt.DataRemoved.*.*`. Schema version 1.
DataRemoved = TypedDict("DataRemoved", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["DataRemoved"],  # Always `DataRemoved`.
    "data": DataRemovedData,  # Blobs were removed because no job needs them and their retention passed (or a node cache evicted them).
    "metadata": DataRemovedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# One problem with an input: where, what, and how to fix it.
DeadLetterErrorIssuesItem = TypedDict("DeadLetterErrorIssuesItem", {
    "path": str,  # Dotted path of the field, e.g. `request.gpus`; empty for the whole input.
    "message": str,  # What is wrong.
    "fix": NotRequired[str],  # What to do about it.
})

# The last error.
DeadLetterError = TypedDict("DeadLetterError", {
    "name": NotRequired[str],  # Error class name, e.g. `ValidationError`.
    "code": NotRequired[str],  # Error code, e.g. `validation_failed`.
    "message": str,  # The error message.
    "issues": NotRequired[List[DeadLetterErrorIssuesItem]],  # For a schema failure: each bad field.
})

# A message a consumer gave up on, on `gpunet.dlq.<consumer>`.
DeadLetter = TypedDict("DeadLetter", {
    "consumer": str,  # Durable consumer that gave up on the message.
    "stream": str,  # Stream the message came from, e.g. `GPUNET_EVENTS`.
    "subject": str,  # Subject the message was published on.
    "streamSequence": str,  # Sequence of the message in its stream.
    "deliveries": int,  # How many times it was delivered before giving up.
    "reason": Literal["schema_invalid", "max_deliveries", "terminal_error"],  # `schema_invalid`: the payload failed its schema, or its schema version is not accepted (`error.code` `unsupported_schema_version`; dead-lettered at once); `max_
    "error": DeadLetterError,  # The last error.
    "headers": Dict[str, List[str]],  # Headers of the original message.
    "payloadBase64": str,  # The original payload bytes, base64.
    "deadAt": str,  # When the message was dead-lettered.
})

# Disable a team; its keys are refused (role `operator`). Same as `POST /v1/teams/{team}/disable`. Subject: `gpunet.cmd.DisableTeam`. Schema version 1.
DisableTeam = TypedDict("DisableTeam", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "reason": NotRequired[str],  # Why, for the record.
})

# The API key that made the change (its id and team), never the key itself.
DisableTeamReplyCreatedBy = TypedDict("DisableTeamReplyCreatedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# The API key that made the change (its id and team), never the key itself.
DisableTeamReplyDisabledBy = TypedDict("DisableTeamReplyDisabledBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# Present when the team is disabled.
DisableTeamReplyDisabled = TypedDict("DisableTeamReplyDisabled", {
    "by": DisableTeamReplyDisabledBy,  # The API key that made the change (its id and team), never the key itself.
    "at": str,  # UTC instant, ISO-8601 with `Z`.
    "reason": NotRequired[str],  # Why, as recorded.
})

# A team.
DisableTeamReply = TypedDict("DisableTeamReply", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "displayName": str,  # Name for people (the id when none was given).
    "timeZone": NotRequired[str],  # IANA time zone of the team, if set.
    "contact": NotRequired[str],  # Who to reach about the team, if set.
    "source": Literal["events", "file"],  # `events`: created with `CreateTeam`; `file`: named by a key of the bootstrap key file.
    "createdBy": NotRequired[DisableTeamReplyCreatedBy],  # The API key that made the change (its id and team), never the key itself.
    "createdAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "disabled": NotRequired[DisableTeamReplyDisabled],  # Present when the team is disabled.
    "activeKeys": int,  # Keys of the team that are neither revoked nor expired.
})

# Operator: place nothing new on this node and record NodeDrained once its running attempts have released their GPUs (NodeDrainRequested). Subject: `gpunet.cmd.DrainNode`. Schema version 1.
DrainNode = TypedDict("DrainNode", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "reason": str,  # Why, for the record.
    "by": NotRequired[str],  # Who does it, for the record (`operator <user>`); intake sets it from the operator's key.
})

# The operator's cordon or drain in force, with who, why and when.
DrainNodeReplyNodeAdmin = TypedDict("DrainNodeReplyNodeAdmin", {
    "state": Literal["cordoned", "draining", "drained"],  # Cordoned, or draining until NodeDrained, then drained.
    "by": str,  # The operator who did it.
    "reason": str,  # Why, in the operator's words.
    "at": str,  # When it was recorded (placement clock).
    "drainedAt": NotRequired[str],  # When the drain completed (NodeDrained).
})

# The node as it now stands.
DrainNodeReplyNode = TypedDict("DrainNodeReplyNode", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "state": Literal["ready", "cordoned", "draining", "drained", "lost", "offline"],  # ready, cordoned, draining, drained, lost or offline (see NODE_STATES).
    "hostname": NotRequired[str],  # Host name the agent registered with.
    "gpus": int,  # GPUs (or declared slots) the node offers.
    "gpusHeld": int,  # GPUs held by attempts now.
    "gpuModels": List[str],  # The models of its GPUs.
    "runningAttempts": int,  # Attempts holding GPUs on the node (placed, not yet released).
    "lastHeartbeatAt": NotRequired[str],  # Placement clock: when its last heartbeat arrived (this placement process).
    "heartbeatAgeMs": NotRequired[int],  # How long ago, at `at` of the reply.
    "leaseMs": NotRequired[int],  # Silence longer than this and the node is declared lost.
    "registeredAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "lostAt": NotRequired[str],  # When placement declared it lost (while it has not registered again).
    "admin": NotRequired[DrainNodeReplyNodeAdmin],  # The operator's cordon or drain in force, with who, why and when.
})

# Reply to DrainNode.
DrainNodeReply = TypedDict("DrainNodeReply", {
    "node": DrainNodeReplyNode,  # The node as it now stands.
    "changed": bool,  # False when the node already was so: nothing was recorded.
    "event": NotRequired[str],  # The event recorded, when one was.
})

# Operator: the recorder takes this node's reports signed with this key (NodeEnrolled). Subject: `gpunet.cmd.EnrollNode`. Schema version 1.
EnrollNode = TypedDict("EnrollNode", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "publicKey": str,  # NKey user public key of the node (`U…`); its reports are signed with the matching seed.
    "enrolledBy": NotRequired[str],  # Who enrolls it, for the record.
})

# Reply to EnrollNode.
EnrollNodeReply = TypedDict("EnrollNodeReply", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "publicKey": str,  # NKey user public key of the node (`U…`); its reports are signed with the matching seed.
    "changed": bool,  # False when the node was already enrolled with this key (nothing recorded).
})

# The request part of a job spec.
EstimateRequest = TypedDict("EstimateRequest", {
    "gpus": int,  # Number of GPUs, a whole number ≥ 1.
    "gpuModel": NotRequired[str],  # Required GPU model; absent: any model.
    "timeLimitMs": int,  # The job's time limit, in ms.
})

# Where a job that is not submitted would land in the current plan: expected start and end, or why it cannot run. Subject: `gpunet.qry.placement.Estimate`. Schema version 1.
Estimate = TypedDict("Estimate", {
    "team": str,  # Who would submit it (its fair share sets the priority). Intake fills it from the caller's API key.
    "request": EstimateRequest,  # The request part of a job spec.
})

# Where the job would land in the current plan.
EstimateReply = TypedDict("EstimateReply", {
    "runnable": bool,  # False when no node can ever run it, or its start cannot be predicted.
    "reason": str,  # When runnable: `StartsNow`, or why it would wait (`Resources`, `Reservation`, `Priority`). Otherwise: `NoNodes` (none registered), `NoNodeFits` (the nodes toget
    "expectedStart": NotRequired[str],  # When it is expected to start (when runnable).
    "expectedEnd": NotRequired[str],  # Expected start plus the time limit: the latest it would end (when runnable).
    "gpuModel": NotRequired[str],  # The GPU model it would run on (when runnable).
    "nodes": NotRequired[int],  # Nodes it would run on (when runnable): more than 1 for a job larger than any node, which gets whole nodes.
    "at": str,  # The plan time this answer is for.
})

# The request part of the spec estimated: a submit on this estimate must ask for exactly this.
EstimateGivenDataRequest = TypedDict("EstimateGivenDataRequest", {
    "gpus": int,  # Number of GPUs, a whole number ≥ 1.
    "gpuModel": NotRequired[str],  # The GPU model the spec requires; absent: any model.
    "timeLimitMs": int,  # The spec's time limit, in ms.
})

# The charge quoted with it, as the ledger priced it; absent when none was quoted.
EstimateGivenDataCharge = TypedDict("EstimateGivenDataCharge", {
    "amountMicros": int,  # The charge of the whole time limit at the expected start: an upper bound.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "rateMicrosPerGpuHour": int,  # The rate applied.
    "priceListVersion": int,  # The price list version the rate came from.
})

# Intake answered an estimate of a job not yet submitted with a start the plan expects (recorded before the answer, stream `intake-estimate-<estimateId>`): the request, the expected start and end, the charge quoted. A submit naming the estimate (`estimateId`) carries it as its JobSubmitted `quote`.
EstimateGivenData = TypedDict("EstimateGivenData", {
    "estimateId": str,  # Estimate id, given by intake with `gpunet estimate` (`POST /v1/estimate`), e.g. `est_0193a5f2c1d87e6b9a4c2f1e0d3b5a79`; a submit may name it to be held to it.
    "team": str,  # The team the estimate was given to: only it may submit on it.
    "requestedBy": NotRequired[str],  # Id of the API key (not the key itself) that asked.
    "request": EstimateGivenDataRequest,  # The request part of the spec estimated: a submit on this estimate must ask for exactly this.
    "gpuModel": str,  # The GPU model the plan would run it on.
    "expectedStart": str,  # When the plan expected the job to start.
    "expectedEnd": str,  # Its expected start plus the time limit: the latest the plan expected it to end.
    "quotedAt": str,  # When intake gave the estimate.
    "deadlineAt": NotRequired[str],  # The spec's deadline as an instant, if it had one.
    "charge": NotRequired[EstimateGivenDataCharge],  # The charge quoted with it, as the ledger priced it; absent when none was quoted.
})

# Metadata every event carries; covered by the hash chain.
EstimateGivenMetadata = TypedDict("EstimateGivenMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# Intake answered an estimate of a job not yet submitted with a start the plan expects (recorded before the answer, stream `intake-estimate-<estimateId>`): the request, the expected start and end, the charge quoted. A submit naming the estimate (`estimateId`) carries it as its JobSubmitted `quote`. Su
EstimateGiven = TypedDict("EstimateGiven", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["EstimateGiven"],  # Always `EstimateGiven`.
    "data": EstimateGivenData,  # Intake answered an estimate of a job not yet submitted with a start the plan expects (recorded before the answer, stream `intake-estimate-<estimateId>`): the re
    "metadata": EstimateGivenMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

EstimateJobSpecWork1Script1 = TypedDict("EstimateJobSpecWork1Script1", {
    "path": str,  # Path of the script inside the job's inputs (relative to `GPUNET_INPUT_DIR`), e.g. `code/train.sh`.
})

EstimateJobSpecWork1Script2 = TypedDict("EstimateJobSpecWork1Script2", {
    "inline": str,  # The script text itself; the agent writes it to a file in the run's work directory.
})

# Run a script as a process on the node.
EstimateJobSpecWork1 = TypedDict("EstimateJobSpecWork1", {
    "kind": Literal["script"],  # A script run as a process on the node.
    "script": Union[EstimateJobSpecWork1Script1, EstimateJobSpecWork1Script2],  # Where the script comes from: `{ path }` inside the inputs, or `{ inline }` text.
    "interpreter": NotRequired[str],  # Program that runs the script, e.g. `bash` or `python3`. Default: the script's `#!` line, else `sh`.
    "args": NotRequired[List[str]],  # Arguments passed to the script.
    "env": NotRequired[Dict[str, str]],  # Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.
})

# The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is held) and loaded there; `image` is then its name for people. Absent: `image` is pulled by the node when it does not hold it.
EstimateJobSpecWork2Archive = TypedDict("EstimateJobSpecWork2Archive", {
    "sha256": str,  # sha256 of the image archive (`podman save` / `docker save` / OCI archive) as `gpunet image push` stored it in the team's blobs.
    "size": int,  # Size in bytes of the archive.
    "keep": NotRequired[str],  # How long the node keeps the staged archive after the job, e.g. `1d`, so later jobs start from its cache; absent: removed at release when no job needs it.
})

# Run a container image on the node.
EstimateJobSpecWork2 = TypedDict("EstimateJobSpecWork2", {
    "kind": Literal["container"],  # A container image run on the node.
    "image": str,  # Container image reference, e.g. `ghcr.io/acme/train:1.4` (pin a digest for reproducible runs).
    "archive": NotRequired[EstimateJobSpecWork2Archive],  # The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is hel
    "command": NotRequired[List[str]],  # Overrides the image's entrypoint; default: the image's own.
    "args": NotRequired[List[str]],  # Arguments passed after the command.
    "env": NotRequired[Dict[str, str]],  # Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.
})

# One input: a file or folder by content address, placed at `path` under `GPUNET_INPUT_DIR`.
EstimateJobSpecDataInputsItem = TypedDict("EstimateJobSpecDataInputsItem", {
    "name": str,  # Name of the input, unique within the job, e.g. `dataset`.
    "path": str,  # Where the input appears, relative to `GPUNET_INPUT_DIR` (read-only), e.g. `data/train`; not `.` (the directory itself).
    "kind": NotRequired[Literal["file", "folder"]],  # `file`: sha256 addresses the file's bytes. `folder`: sha256 addresses the folder manifest (see FolderManifest).
    "sha256": str,  # Content address: sha256 of the file, or of the folder manifest for a folder.
    "size": int,  # Size in bytes of the blob that sha256 addresses (the file, or the folder manifest).
    "keep": NotRequired[str],  # Keep the staged input this long after the job, so related jobs reuse it, e.g. `7d`. Default: removed at release.
    "dataset": NotRequired[str],  # Name the input as one of the team's datasets, e.g. `imagenet-2012`: it is kept for related jobs (in the object store and in node caches) until a later job of th
})

# What the job reads.
EstimateJobSpecData = TypedDict("EstimateJobSpecData", {
    "inputs": NotRequired[List[EstimateJobSpecDataInputsItem]],  # Files and folders the job reads, by content address; staged before compute is held (staging is not billed).
})

# A signal before the time limit, so the job can checkpoint and exit; then SIGTERM at the limit, grace, SIGKILL.
EstimateJobSpecRequestWarning = TypedDict("EstimateJobSpecRequestWarning", {
    "signal": NotRequired[Literal["SIGUSR1", "SIGUSR2", "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGWINCH"]],  # Signal sent to the job's process group, e.g. `SIGUSR1`.
    "before": str,  # How long before the time limit the signal comes, e.g. `60s`.
})

# What the job needs: GPUs, model, time limit, deadline, network.
EstimateJobSpecRequest = TypedDict("EstimateJobSpecRequest", {
    "gpus": int,  # Number of GPUs, a whole number ≥ 1, e.g. `gpus: 2`. All on one node.
    "gpuModel": NotRequired[str],  # Required GPU model, e.g. `A100-80GB`. Default: any model.
    "timeLimit": str,  # Longest the job may run once started, e.g. `2h`, `90m`, `1h30m` (units ms, s, m, h, d; at most 30d). At the limit it gets SIGTERM, then SIGKILL.
    "deadline": NotRequired[str],  # When the job must be finished by, as written: an ISO-8601 time (`2025-07-01T18:00:00Z`), a duration from submission (`+6h`, `in 90m`), or a phrase in the team's
    "network": NotRequired[bool],  # Whether the job may use the network. Default `false`: no network.
    "warning": NotRequired[EstimateJobSpecRequestWarning],  # A signal before the time limit, so the job can checkpoint and exit; then SIGTERM at the limit, grace, SIGKILL.
})

# Which files of the run to keep.
EstimateJobSpecOutputs = TypedDict("EstimateJobSpecOutputs", {
    "globs": List[str],  # Glob patterns, relative to `GPUNET_OUTPUT_DIR`, of the files to keep after the run, e.g. `model/**`.
    "maxBytes": NotRequired[int],  # Most bytes of output to keep; files beyond it are skipped and the result is marked truncated.
})

# Run the job again when it fails with one of these exit codes, up to maxAttempts.
EstimateJobSpecRetry = TypedDict("EstimateJobSpecRetry", {
    "exitCodes": List[int],  # Exit codes after which the job is run again (from its last checkpoint), e.g. `[75]`. Other failures end the job.
    "maxAttempts": int,  # Most attempts that may end in one of `exitCodes`, the first one included; attempts lost with their node do not count.
})

# Saving `GPUNET_CHECKPOINT_DIR`; a later attempt of the job starts with the last saved checkpoint.
EstimateJobSpecCheckpoint = TypedDict("EstimateJobSpecCheckpoint", {
    "interval": str,  # How often `GPUNET_CHECKPOINT_DIR` is saved while the job runs, e.g. `10m` (it is always saved when the job ends).
})

# Caps on memory and disk; each defaults to the node's share per GPU.
EstimateJobSpecResources = TypedDict("EstimateJobSpecResources", {
    "memory": NotRequired[Union[str, int]],  # Most memory the job may use (its processes and what it keeps in /tmp and /dev/shm), e.g. `16GiB`; beyond it the kernel kills a process of the job. Default: the 
    "disk": NotRequired[Union[str, int]],  # Most disk the job may fill (work, outputs, checkpoints, /tmp), e.g. `100GiB`; beyond it the job is stopped (`failed`, limit `disk_limit`). Default: the node's d
})

# A gpunet job: the work, the data, the request and the outputs.
EstimateJobSpec = TypedDict("EstimateJobSpec", {
    "name": NotRequired[str],  # A label for people, e.g. `resnet50-finetune`; not unique.
    "work": Union[EstimateJobSpecWork1, EstimateJobSpecWork2],  # What to run: a script (`kind: script`) or a container image (`kind: container`).
    "data": NotRequired[EstimateJobSpecData],  # What the job reads.
    "request": EstimateJobSpecRequest,  # What the job needs: GPUs, model, time limit, deadline, network.
    "outputs": NotRequired[EstimateJobSpecOutputs],  # Which files of the run to keep.
    "retry": NotRequired[EstimateJobSpecRetry],  # Run the job again when it fails with one of these exit codes, up to maxAttempts.
    "checkpoint": NotRequired[EstimateJobSpecCheckpoint],  # Saving `GPUNET_CHECKPOINT_DIR`; a later attempt of the job starts with the last saved checkpoint.
    "resources": NotRequired[EstimateJobSpecResources],  # Caps on memory and disk; each defaults to the node's share per GPU.
})

# Estimate a job spec without submitting it: expected start, end and charge (same as `POST /v1/estimate`). Subject: `gpunet.qry.intake.EstimateJob`. Schema version 1.
EstimateJob = TypedDict("EstimateJob", {
    "spec": EstimateJobSpec,  # A gpunet job: the work, the data, the request and the outputs.
})

# The expected charge at most: its whole time limit, priced by the ledger at the expected start (when runnable; billing counts only the time held).
EstimateJobReplyCharge = TypedDict("EstimateJobReplyCharge", {
    "amountMicros": int,  # gpus × durationMs × rate / 1 h, rounded half up once, as a usage line would be.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "rateMicrosPerGpuHour": int,  # The rate applied.
    "priceListVersion": int,  # The price list version the rate comes from.
})

# When the team has a budget: the worst case it would reserve and what would remain this month after it.
EstimateJobReplyBudget = TypedDict("EstimateJobReplyBudget", {
    "worstCaseMicros": int,  # The job's charge at most: gpus × time limit × rate.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "monthlyMicros": NotRequired[int],  # The team's monthly budget; absent: none.
    "spentMicros": int,  # Billed this month for jobs that ended.
    "reservedMicros": int,  # Worst cases of the team's other jobs that have not ended.
    "remainingMicros": NotRequired[int],  # What remains this month after this job: monthly − spent − reserved − this job (absent without a budget).
    "onExceed": NotRequired[Literal["refuse", "hold"]],  # What a submit that would take the team past its budget gets: `refuse` (an error naming the figures; the default) or `hold` (accepted, waits in the queue with re
    "held": bool,  # True when the job waits for the budget (reason `BudgetExceeded`).
})

# When the job would start and end, and what it would cost at most; nothing is submitted (the estimate itself is recorded).
EstimateJobReply = TypedDict("EstimateJobReply", {
    "runnable": bool,  # False when no node can ever run it, or its start cannot be predicted.
    "reason": str,  # When runnable: `StartsNow`, or why it would wait (`Resources`, `Reservation`, `Priority`). Otherwise: `NoNodes` (none registered), `NoNodeFits` (the nodes toget
    "expectedStart": NotRequired[str],  # When it is expected to start (when runnable).
    "expectedEnd": NotRequired[str],  # Expected start plus the time limit: the latest it would end (when runnable).
    "gpuModel": NotRequired[str],  # The GPU model it would run on (when runnable).
    "nodes": NotRequired[int],  # Nodes it would run on (when runnable): more than 1 for a job larger than any node, which gets whole nodes.
    "at": str,  # The plan time this answer is for.
    "deadlineAt": NotRequired[str],  # The spec's deadline as an instant, if it has one.
    "charge": NotRequired[EstimateJobReplyCharge],  # The expected charge at most: its whole time limit, priced by the ledger at the expected start (when runnable; billing counts only the time held).
    "budget": NotRequired[EstimateJobReplyBudget],  # When the team has a budget: the worst case it would reserve and what would remain this month after it.
    "estimateId": NotRequired[str],  # The estimate as recorded (EstimateGiven), when it has an expected start: name it at submit (`estimateId`, `gpunet submit --estimate`) to hold the job to it. Abs
})

# A submit named the estimate and was accepted: the job it is the promise of. Appended once per estimate (at the revision read), so an estimate is one job's promise.
EstimateUsedData = TypedDict("EstimateUsedData", {
    "estimateId": str,  # Estimate id, given by intake with `gpunet estimate` (`POST /v1/estimate`), e.g. `est_0193a5f2c1d87e6b9a4c2f1e0d3b5a79`; a submit may name it to be held to it.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "usedBy": str,  # The job submitted on the estimate: the only one it is a promise to.
    "usedAt": str,  # When intake accepted the submit that named it.
})

# Metadata every event carries; covered by the hash chain.
EstimateUsedMetadata = TypedDict("EstimateUsedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A submit named the estimate and was accepted: the job it is the promise of. Appended once per estimate (at the revision read), so an estimate is one job's promise. Subject: `gpunet.evt.EstimateUsed.*.*`. Schema version 1.
EstimateUsed = TypedDict("EstimateUsed", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["EstimateUsed"],  # Always `EstimateUsed`.
    "data": EstimateUsedData,  # A submit named the estimate and was accepted: the job it is the promise of. Appended once per estimate (at the revision read), so an estimate is one job's promi
    "metadata": EstimateUsedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# One entry of a team's feed: an SSE `data` of `GET /v1/feed`, a `ReadFeed` reply entry, a notification on `gpunet.feed.<team>.<jobId>`.
FeedEntry = TypedDict("FeedEntry", {
    "position": str,  # The event's position in the store: the SSE `id`, and what to pass as `after` (or `Last-Event-ID`) to resume after it.
    "eventId": str,  # The event's id (unique; the same event is never sent under another id).
    "type": Literal["JobSubmitted", "JobRejected", "JobCancelRequested", "InputsStaged", "StagingFailed", "JobPlaced", "ComputeHeld", "JobStarted", "JobCheckpointed", "JobFinished", "JobRequeued", "ComputeReleased", "JobWithdrawn", "JobQuoted", "OutputsStored", "UsageRecorded", "DataRemoved", "JobEnded", "BudgetReserved", "BudgetReleased", "BudgetThresholdCrossed"],  # The event type; `data` is that event's data (`contracts/generated/json-schema/<type>.json`).
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "data": Dict[str, Any],  # The event's data as recorded.
    "occurredAt": str,  # When it happened, as its producer says.
    "recordedAt": str,  # When the store recorded it.
    "producer": str,  # The service that recorded it.
    "correlationId": str,  # Ties together every event caused by one request (e.g. the submit).
})

# One file of the folder.
FolderManifestEntriesItem = TypedDict("FolderManifestEntriesItem", {
    "path": str,  # File path inside the folder, `/`-separated.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
    "executable": NotRequired[bool],  # True when the file must be executable (e.g. a script run by its `#!` line).
})

# The manifest blob that addresses a folder input.
FolderManifest = TypedDict("FolderManifest", {
    "format": Literal["gpunet.folder/1"],  # Always `gpunet.folder/1`.
    "entries": List[FolderManifestEntriesItem],  # Every file of the folder, each path once; sorted by path (Unicode code points) in the canonical form.
})

# A team's budget and this month's figures (own team; `billing` any). Same as `GET /v1/budgets/{team}`. Subject: `gpunet.qry.intake.GetBudget`. Schema version 1.
GetBudget = TypedDict("GetBudget", {
    "team": NotRequired[str],  # Default: the caller's team; another team's needs role `billing`.
})

# The API key that made the change (its id and team), never the key itself.
GetBudgetReplyBudgetSetBy = TypedDict("GetBudgetReplyBudgetSetBy", {
    "keyId": str,  # Id of the acting API key (never the key itself).
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# The budget in force; absent: none (jobs are not checked).
GetBudgetReplyBudget = TypedDict("GetBudgetReplyBudget", {
    "monthlyMicros": int,  # What the team may commit per UTC month (spent + reserved), in micro-units of `currency`.
    "currency": str,  # The price list's currency the amount is in.
    "onExceed": Literal["refuse", "hold"],  # What a submit that would take the team past its budget gets: `refuse` (an error naming the figures; the default) or `hold` (accepted, waits in the queue with re
    "thresholdsPercent": List[int],  # Soft thresholds, ascending, in percent.
    "setBy": GetBudgetReplyBudgetSetBy,  # The API key that made the change (its id and team), never the key itself.
    "setAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# A team's budget and where it stands this month.
GetBudgetReply = TypedDict("GetBudgetReply", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "month": str,  # The UTC month of the figures, `YYYY-MM`.
    "budget": NotRequired[GetBudgetReplyBudget],  # The budget in force; absent: none (jobs are not checked).
    "spentMicros": int,  # Billed this month for jobs that ended.
    "reservedMicros": int,  # Worst cases of jobs that have not ended.
    "remainingMicros": int,  # monthly − spent − reserved; negative when held jobs wait beyond the budget. Absent budget: 0.
    "heldJobs": List[str],  # Reserved jobs that have not run and do not fit the budget now, in order: they wait in the queue with reason `BudgetExceeded`.
    "thresholdsCrossed": List[int],  # Thresholds crossed this month.
    "revision": str,  # Revision of the budget stream the figures are at (`-1`: nothing recorded).
})

# Who asks, set by intake from the caller's key: the charges of `principal.team` (of every team only with `allTeams`). The subject accepts only intake.
GetChargesPrincipal = TypedDict("GetChargesPrincipal", {
    "keyId": str,  # Id of the API key that asked (never the key itself).
    "team": str,  # The key's team.
    "role": str,  # The key's role, e.g. `producer`, `billing`, `compliance`.
    "allTeams": bool,  # True when the answer may cover every team (a compliance key's audit, or the operator); false confines it to `team`.
})

# Usage lines and totals of a team, or of one job. Subject: `gpunet.qry.ledger.GetCharges`. Schema version 1.
GetCharges = TypedDict("GetCharges", {
    "principal": GetChargesPrincipal,  # Who asks, set by intake from the caller's key: the charges of `principal.team` (of every team only with `allTeams`). The subject accepts only intake.
    "jobId": NotRequired[str],  # Only this job's charges (of the principal's team).
    "from": NotRequired[str],  # Only attempts finished at or after this time.
    "to": NotRequired[str],  # Only attempts finished before this time.
})

GetChargesReplyLinesItem = TypedDict("GetChargesReplyLinesItem", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": int,  # GPUs held by the attempt.
    "outcome": Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"],  # How the attempt ended: `completed` (exit 0), `failed` (non-zero exit or could not start), `timeout` (time limit hit, killed), `cancelled` (on request), `node_lo
    "heldFrom": str,  # ComputeHeld.heldAt of the attempt (agent clock).
    "finishedAt": str,  # JobFinished.finishedAt of the attempt (same agent's clock).
    "billableMs": int,  # finishedAt − heldFrom in ms, never negative.
    "rateMicrosPerGpuHour": int,  # Rate applied, micro-units per GPU per hour.
    "amountMicros": int,  # Charge: gpus × billableMs × rate / 3,600,000, rounded once by the rounding rule; 0 when waived.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "priceListVersion": int,  # Version of the price list the rate came from.
    "rounding": str,  # Name of the rounding rule applied, e.g. `per-line-half-up-micros` (exact value, then half up, once per line).
    "waivedReason": NotRequired[Literal["platform_fault"]],  # Present when the attempt is not charged: `platform_fault` (e.g. node lost). amountMicros is then 0.
    "recordedAt": str,  # When the ledger computed the line.
})

GetChargesReplyTotalsItem = TypedDict("GetChargesReplyTotalsItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Sum of the lines' amountMicros.
})

# Charges, as the ledger recorded them.
GetChargesReply = TypedDict("GetChargesReply", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "lines": List[GetChargesReplyLinesItem],  # One line per attempt and node, in order of `finishedAt`, then attempt id, then node id: the same order on every replay.
    "totals": List[GetChargesReplyTotalsItem],  # Sum per currency.
    "billableMs": int,  # Sum of the lines' billableMs.
})

# Who asks, set by intake from the caller's key: another team's invoice is not found unless `allTeams`. The subject accepts only intake.
GetDisputeBundlePrincipal = TypedDict("GetDisputeBundlePrincipal", {
    "keyId": str,  # Id of the API key that asked (never the key itself).
    "team": str,  # The key's team.
    "role": str,  # The key's role, e.g. `producer`, `billing`, `compliance`.
    "allTeams": bool,  # True when the answer may cover every team (a compliance key's audit, or the operator); false confines it to `team`.
})

# An invoice's dispute bundle (its events in whole hash-chained streams, the signed heads), as `gpunet dispute-bundle` writes it. Subject: `gpunet.qry.ledger.GetDisputeBundle`. Schema version 1.
GetDisputeBundle = TypedDict("GetDisputeBundle", {
    "invoiceId": str,  # Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.
    "principal": GetDisputeBundlePrincipal,  # Who asks, set by intake from the caller's key: another team's invoice is not found unless `allTeams`. The subject accepts only intake.
})

# The invoice (InvoiceBody).
GetDisputeBundleReplyBundleInvoice = TypedDict("GetDisputeBundleReplyBundleInvoice", {
    "invoiceId": str,  # Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.
})

GetDisputeBundleReplyBundleStreamsItem = TypedDict("GetDisputeBundleReplyBundleStreamsItem", {
    "streamId": str,  # The stream.
    "head": Dict[str, Any],  # Its last revision, position and hash.
    "events": List[Dict[str, Any]],  # Every event from revision 0 to the head, with its hash.
})

# A dispute bundle (`gpunet.dispute-bundle/1`): check it offline with `gpunet verify --bundle FILE --public-key KEY`.
GetDisputeBundleReplyBundle = TypedDict("GetDisputeBundleReplyBundle", {
    "format": Literal["gpunet.dispute-bundle/1"],  # The bundle format and its version.
    "createdAt": str,  # UTC instant, ISO-8601 with `Z`.
    "chain": Literal["sha256", "hmac-sha256"],  # `hmac-sha256`: the checker needs the store's chain key (`GPUNET_CHAIN_KEY`).
    "invoice": GetDisputeBundleReplyBundleInvoice,  # The invoice (InvoiceBody).
    "invoiceStatus": Literal["draft", "finalized"],  # `draft`: the month is open or inside its late-event cutoff, it may still change; `finalized`: frozen, corrected only by credit notes.
    "contributingEventIds": List[str],  # Ids of the events the invoice comes from.
    "streams": List[GetDisputeBundleReplyBundleStreamsItem],  # Whole streams, revision 0 to their head, with every hash.
    "proves": str,  # What a successful `gpunet verify --bundle` proves, and what it does not.
})

# A dispute bundle and the file name to save it under.
GetDisputeBundleReply = TypedDict("GetDisputeBundleReply", {
    "fileName": str,  # `<invoiceId>.bundle.json`.
    "bundle": GetDisputeBundleReplyBundle,  # A dispute bundle (`gpunet.dispute-bundle/1`): check it offline with `gpunet verify --bundle FILE --public-key KEY`.
})

# Who asks, set by intake from the caller's key: another team's invoice is not found unless `allTeams`. The subject accepts only intake.
GetInvoicePrincipal = TypedDict("GetInvoicePrincipal", {
    "keyId": str,  # Id of the API key that asked (never the key itself).
    "team": str,  # The key's team.
    "role": str,  # The key's role, e.g. `producer`, `billing`, `compliance`.
    "allTeams": bool,  # True when the answer may cover every team (a compliance key's audit, or the operator); false confines it to `team`.
})

# One invoice: lines, totals, postings, status, credit notes. Subject: `gpunet.qry.ledger.GetInvoice`. Schema version 1.
GetInvoice = TypedDict("GetInvoice", {
    "invoiceId": str,  # Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.
    "principal": GetInvoicePrincipal,  # Who asks, set by intake from the caller's key: another team's invoice is not found unless `allTeams`. The subject accepts only intake.
})

# One attempt on one node, as billed.
GetInvoiceReplyLinesItem = TypedDict("GetInvoiceReplyLinesItem", {
    "lineId": str,  # `<attemptId>@<nodeId>`: one line per attempt per node (a multi-node attempt has one line per node).
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "run": NotRequired[int],  # Run number of the attempt (1 for the first), when the attempt id says it.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": int,  # Number of GPUs, a whole number ≥ 1.
    "gpuIndices": List[int],  # GPU indices on the node, each once; the job sees them through `CUDA_VISIBLE_DEVICES`.
    "outcome": Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"],  # How the attempt ended: `completed` (exit 0), `failed` (non-zero exit or could not start), `timeout` (time limit hit, killed), `cancelled` (on request), `node_lo
    "heldFrom": str,  # ComputeHeld.heldAt (agent clock).
    "finishedAt": str,  # JobFinished.finishedAt (same agent clock).
    "billableMs": int,  # finishedAt − heldFrom, never negative; 0 when waived.
    "rateMicrosPerGpuHour": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "priceListVersion": int,  # Version of the price list the rate came from (0 never: a what-if list is version ≥ 1 too).
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # gpus × billableMs × rate / 3,600,000 rounded once half up, raised to the minimum charge if any; 0 when waived.
    "minimumApplied": bool,  # True when the minimum charge replaced the rounded amount.
    "waivedReason": NotRequired[Literal["platform_fault"]],  # Why the line is not charged (`platform_fault`: the node was lost).
    "lateFrom": NotRequired[str],  # The month the attempt finished in, when that month's invoice was already finalized before the line was complete.
    "completedAtPosition": str,  # Store position of the later of ComputeHeld and JobFinished: when the line became complete.
    "eventIds": List[str],  # Contributing events: ComputeHeld, JobFinished, then the price list, the NodeLost and the JobSubmitted when used.
})

GetInvoiceReplyTotalsItem = TypedDict("GetInvoiceReplyTotalsItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Sum of the lines' amounts (never rounded again).
    "billableMs": int,  # Sum of the lines' billable ms.
    "lines": int,  # Number of lines in this currency.
})

# One side of a double-entry posting.
GetInvoiceReplyPostingsItem = TypedDict("GetInvoiceReplyPostingsItem", {
    "account": str,  # `receivable:<team>` or `revenue:compute`.
    "side": Literal["debit", "credit"],  # `debit` or `credit`.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "ref": str,  # The invoice or credit note it posts.
})

GetInvoiceReplyCreditNotesItemLinesItem = TypedDict("GetInvoiceReplyCreditNotesItemLinesItem", {
    "lineId": str,  # The invoice line credited.
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Amount credited (positive).
    "reason": Literal["platform_fault"],  # Why: `platform_fault` (the node was declared lost after the invoice was finalized).
    "eventIds": List[str],  # Events that call for the correction.
})

GetInvoiceReplyCreditNotesItemTotalsItem = TypedDict("GetInvoiceReplyCreditNotesItemTotalsItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
})

# One side of a double-entry posting.
GetInvoiceReplyCreditNotesItemPostingsItem = TypedDict("GetInvoiceReplyCreditNotesItemPostingsItem", {
    "account": str,  # `receivable:<team>` or `revenue:compute`.
    "side": Literal["debit", "credit"],  # `debit` or `credit`.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "ref": str,  # The invoice or credit note it posts.
})

GetInvoiceReplyCreditNotesItem = TypedDict("GetInvoiceReplyCreditNotesItem", {
    "creditNoteId": str,  # `<invoiceId>-cn<n>`, n from 1.
    "invoiceId": str,  # Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "derivedAtPosition": str,  # Store position the correction was derived at.
    "issuedAt": str,  # UTC instant, ISO-8601 with `Z`.
    "lines": List[GetInvoiceReplyCreditNotesItemLinesItem],  # The lines credited, each referencing an invoice line.
    "totals": List[GetInvoiceReplyCreditNotesItemTotalsItem],  # Credited per currency.
    "postings": List[GetInvoiceReplyCreditNotesItemPostingsItem],  # Debit revenue:compute, credit receivable:<team>, per currency.
})

GetInvoiceReplyNetItem = TypedDict("GetInvoiceReplyNetItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
})

# An invoice with its status and credit notes.
GetInvoiceReply = TypedDict("GetInvoiceReply", {
    "invoiceId": str,  # Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "month": str,  # Calendar month in UTC, `YYYY-MM`.
    "periodStart": str,  # First instant of the month (UTC).
    "periodEnd": str,  # First instant of the next month (UTC), exclusive.
    "derivedAtPosition": str,  # Store position the invoice was derived at: replaying the store up to it gives the same invoice.
    "rounding": str,  # The rounding rule, `per-line-half-up-micros`.
    "lines": List[GetInvoiceReplyLinesItem],  # Ordered by finishedAt, heldFrom, jobId, attemptId, nodeId.
    "totals": List[GetInvoiceReplyTotalsItem],  # Per currency, in the order currencies first appear.
    "postings": List[GetInvoiceReplyPostingsItem],  # Debit receivable:<team>, credit revenue:compute, per currency.
    "status": Literal["draft", "finalized"],  # `draft`: the month is open or inside its late-event cutoff, it may still change; `finalized`: frozen, corrected only by credit notes.
    "finalizesAt": str,  # Month end plus the late-event cutoff: a draft becomes final then.
    "finalizedAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "creditNotes": List[GetInvoiceReplyCreditNotesItem],  # Corrections, oldest first.
    "net": List[GetInvoiceReplyNetItem],  # Totals minus credit notes, per currency.
})

# One job: state, spec, attempts, outputs and timeline. Subject: `gpunet.qry.intake.GetJob`. Schema version 1.
GetJob = TypedDict("GetJob", {
    "jobId": str,  # The job to read, e.g. `job_01jz8k4m2n`.
})

GetJobReplySpecWork1Script1 = TypedDict("GetJobReplySpecWork1Script1", {
    "path": str,  # Path of the script inside the job's inputs (relative to `GPUNET_INPUT_DIR`), e.g. `code/train.sh`.
})

GetJobReplySpecWork1Script2 = TypedDict("GetJobReplySpecWork1Script2", {
    "inline": str,  # The script text itself; the agent writes it to a file in the run's work directory.
})

# Run a script as a process on the node.
GetJobReplySpecWork1 = TypedDict("GetJobReplySpecWork1", {
    "kind": Literal["script"],  # A script run as a process on the node.
    "script": Union[GetJobReplySpecWork1Script1, GetJobReplySpecWork1Script2],  # Where the script comes from: `{ path }` inside the inputs, or `{ inline }` text.
    "interpreter": NotRequired[str],  # Program that runs the script, e.g. `bash` or `python3`. Default: the script's `#!` line, else `sh`.
    "args": NotRequired[List[str]],  # Arguments passed to the script.
    "env": NotRequired[Dict[str, str]],  # Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.
})

# The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is held) and loaded there; `image` is then its name for people. Absent: `image` is pulled by the node when it does not hold it.
GetJobReplySpecWork2Archive = TypedDict("GetJobReplySpecWork2Archive", {
    "sha256": str,  # sha256 of the image archive (`podman save` / `docker save` / OCI archive) as `gpunet image push` stored it in the team's blobs.
    "size": int,  # Size in bytes of the archive.
    "keep": NotRequired[str],  # How long the node keeps the staged archive after the job, e.g. `1d`, so later jobs start from its cache; absent: removed at release when no job needs it.
})

# Run a container image on the node.
GetJobReplySpecWork2 = TypedDict("GetJobReplySpecWork2", {
    "kind": Literal["container"],  # A container image run on the node.
    "image": str,  # Container image reference, e.g. `ghcr.io/acme/train:1.4` (pin a digest for reproducible runs).
    "archive": NotRequired[GetJobReplySpecWork2Archive],  # The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is hel
    "command": NotRequired[List[str]],  # Overrides the image's entrypoint; default: the image's own.
    "args": NotRequired[List[str]],  # Arguments passed after the command.
    "env": NotRequired[Dict[str, str]],  # Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.
})

# One input: a file or folder by content address.
GetJobReplySpecDataInputsItem = TypedDict("GetJobReplySpecDataInputsItem", {
    "name": str,  # Name of the input, unique within the job, e.g. `dataset`.
    "path": str,  # Where the input appears, relative to `GPUNET_INPUT_DIR` (read-only), e.g. `data/train`; not `.` (the directory itself).
    "kind": NotRequired[Literal["file", "folder"]],  # `file`: sha256 addresses the file's bytes. `folder`: sha256 addresses the folder manifest (see FolderManifest).
    "sha256": str,  # Content address: sha256 of the file, or of the folder manifest for a folder.
    "size": int,  # Size in bytes of the blob that sha256 addresses (the file, or the folder manifest).
    "keepMs": NotRequired[int],  # How long to keep the staged input after the job, in ms; absent: removed at release.
    "dataset": NotRequired[str],  # Name the input as one of the team's datasets, e.g. `imagenet-2012`: it is kept for related jobs (in the object store and in node caches) until a later job of th
})

# What the job reads.
GetJobReplySpecData = TypedDict("GetJobReplySpecData", {
    "inputs": List[GetJobReplySpecDataInputsItem],  # Files and folders the job reads, by content address; staged before compute is held (staging is not billed).
})

# A signal before the time limit; absent: none.
GetJobReplySpecRequestWarning = TypedDict("GetJobReplySpecRequestWarning", {
    "signal": Literal["SIGUSR1", "SIGUSR2", "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGWINCH"],  # Signal sent to the job's process group, e.g. `SIGUSR1`.
    "beforeMs": int,  # How long before the time limit, in ms.
})

# What the job needs.
GetJobReplySpecRequest = TypedDict("GetJobReplySpecRequest", {
    "gpus": int,  # Number of GPUs, a whole number ≥ 1.
    "gpuModel": NotRequired[str],  # Required GPU model; absent: any model.
    "timeLimitMs": int,  # Longest the job may run once started, in ms.
    "deadline": NotRequired[str],  # When the job must be finished by, as written: an ISO-8601 time (`2025-07-01T18:00:00Z`), a duration from submission (`+6h`, `in 90m`), or a phrase in the team's
    "network": bool,  # Whether the job may use the network.
    "warning": NotRequired[GetJobReplySpecRequestWarning],  # A signal before the time limit; absent: none.
})

# Which files of the run to keep.
GetJobReplySpecOutputs = TypedDict("GetJobReplySpecOutputs", {
    "globs": List[str],  # Glob patterns, relative to `GPUNET_OUTPUT_DIR`, of the files to keep after the run, e.g. `model/**`.
    "maxBytes": NotRequired[int],  # Most bytes of output to keep; files beyond it are skipped and the result is marked truncated.
})

# Run the job again when it fails with one of these exit codes, up to maxAttempts.
GetJobReplySpecRetry = TypedDict("GetJobReplySpecRetry", {
    "exitCodes": List[int],  # Exit codes after which the job is run again (from its last checkpoint), e.g. `[75]`. Other failures end the job.
    "maxAttempts": int,  # Most attempts that may end in one of `exitCodes`, the first one included; attempts lost with their node do not count.
})

# Saving the checkpoint directory; absent: the node's default interval.
GetJobReplySpecCheckpoint = TypedDict("GetJobReplySpecCheckpoint", {
    "intervalMs": int,  # How often the checkpoint directory is saved while the job runs, in ms.
})

# Memory and disk caps the job asked for; absent: the node's defaults.
GetJobReplySpecResources = TypedDict("GetJobReplySpecResources", {
    "memoryBytes": NotRequired[int],  # Memory cap in bytes; absent: the node's default per GPU.
    "diskBytes": NotRequired[int],  # Disk cap in bytes; absent: the node's default per GPU.
})

# A job spec as messages carry it: defaults filled, durations in integer ms.
GetJobReplySpec = TypedDict("GetJobReplySpec", {
    "name": NotRequired[str],  # A label for people, e.g. `resnet50-finetune`; not unique.
    "work": Union[GetJobReplySpecWork1, GetJobReplySpecWork2],  # What to run: a script (`kind: script`) or a container image (`kind: container`).
    "data": GetJobReplySpecData,  # What the job reads.
    "request": GetJobReplySpecRequest,  # What the job needs.
    "outputs": GetJobReplySpecOutputs,  # Which files of the run to keep.
    "retry": NotRequired[GetJobReplySpecRetry],  # Run the job again when it fails with one of these exit codes, up to maxAttempts.
    "checkpoint": NotRequired[GetJobReplySpecCheckpoint],  # Saving the checkpoint directory; absent: the node's default interval.
    "resources": NotRequired[GetJobReplySpecResources],  # Memory and disk caps the job asked for; absent: the node's defaults.
})

# The first start quoted for the job, as recorded: the estimate it was submitted on or its deadline was accepted on (JobSubmitted), else the first start shown while it waited (JobQuoted). With the first attempt's placedAt and the last attempt's finishedAt, how far off it was.
GetJobReplyQuote = TypedDict("GetJobReplyQuote", {
    "expectedStart": str,  # The start quoted.
    "expectedEnd": NotRequired[str],  # The end quoted with it (the estimate the job was submitted on or its deadline accepted on: start plus the time limit).
    "quotedAt": str,  # When it was quoted.
    "estimateId": NotRequired[str],  # The estimate the job was submitted on, when the submit named one.
})

# One node's part of a multi-node attempt.
GetJobReplyAttemptsItemNodesItem = TypedDict("GetJobReplyAttemptsItemNodesItem", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuIndices": List[int],  # GPU indices on the node, each once; the job sees them through `CUDA_VISIBLE_DEVICES`.
    "heldAt": NotRequired[str],  # When this node's agent held its GPUs (its billing starts).
    "finishedAt": NotRequired[str],  # When this part ended (its billing stops).
    "releasedAt": NotRequired[str],  # When this node's GPUs were freed.
    "outcome": NotRequired[Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"]],  # How the attempt ended: `completed` (exit 0), `failed` (non-zero exit or could not start), `timeout` (time limit hit, killed), `cancelled` (on request), `node_lo
    "exitCode": NotRequired[Union[int, None]],  # Exit code of this part, null when killed by a signal.
    "peerEnded": NotRequired[str],  # Set when this part was stopped because the part on that node ended first.
})

# One run attempt of the job.
GetJobReplyAttemptsItem = TypedDict("GetJobReplyAttemptsItem", {
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "attempt": int,  # Attempt number, 1 for the first run.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuIndices": List[int],  # GPU indices on the node, each once; the job sees them through `CUDA_VISIBLE_DEVICES`.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "placedAt": str,  # When placement chose the node.
    "heldAt": NotRequired[str],  # When the agent held the GPUs (billing starts).
    "startedAt": NotRequired[str],  # When the process started.
    "finishedAt": NotRequired[str],  # When the attempt ended (billing stops).
    "releasedAt": NotRequired[str],  # When the GPUs were freed.
    "outcome": NotRequired[Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"]],  # How the attempt ended: `completed` (exit 0), `failed` (non-zero exit or could not start), `timeout` (time limit hit, killed), `cancelled` (on request), `node_lo
    "exitCode": NotRequired[Union[int, None]],  # Exit code, null when killed by a signal; absent until finished.
    "limit": NotRequired[Literal["disk_limit", "memory_limit"]],  # Set when the agent stopped the attempt at one of its caps, e.g. `disk_limit`.
    "message": NotRequired[str],  # What the agent said of how the attempt ended, e.g. why it could not start or which cap stopped it.
    "predictedRunMs": NotRequired[int],  # Placement's run-time prediction for the attempt when it placed it (the time limit still stops it).
    "deadlineNote": NotRequired[str],  # Set when, at placement, running to the time limit would pass the job's deadline: the facts of why, in the job's record.
    "nodes": NotRequired[List[GetJobReplyAttemptsItemNodesItem]],  # Multi-node attempts only: every part in rank order (rank 0 first). The attempt's nodeId/gpuIndices are rank 0's; its heldAt is the first part's hold, its finish
})

# One output file: where the job wrote it and its content address.
GetJobReplyOutputsFilesItem = TypedDict("GetJobReplyOutputsFilesItem", {
    "path": str,  # Path relative to `GPUNET_OUTPUT_DIR`, with `/` separators.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

# An output file that matched the globs but was refused.
GetJobReplyOutputsRejectedItem = TypedDict("GetJobReplyOutputsRejectedItem", {
    "path": str,  # Path relative to `GPUNET_OUTPUT_DIR`, with `/` separators; control characters escaped as in JSON (`\n`) for `invalid_name`.
    "reason": Literal["symlink_outside", "symlink_dangling", "not_regular_file", "size_cap", "changed", "unreadable", "invalid_name"],  # `symlink_outside`: a symlink pointing outside the output directory (never followed); `symlink_dangling`: points at nothing; `not_regular_file`: a directory link
    "message": str,  # What was refused and why, for people.
})

# Stored outputs, once OutputsStored.
GetJobReplyOutputs = TypedDict("GetJobReplyOutputs", {
    "files": List[GetJobReplyOutputsFilesItem],  # Stored output files.
    "totalBytes": int,  # Sum of their sizes.
    "truncated": bool,  # Files were skipped at maxBytes.
    "rejected": NotRequired[List[GetJobReplyOutputsRejectedItem]],  # Files matching the globs that were refused (a symlink leaving the output directory, the size cap, …), each with why.
})

GetJobReplyEndedBilledTotalsItem = TypedDict("GetJobReplyEndedBilledTotalsItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
})

# What the ledger billed for the job, all attempts together.
GetJobReplyEndedBilled = TypedDict("GetJobReplyEndedBilled", {
    "billableMs": int,  # Billable time over every attempt and node, ms.
    "totals": List[GetJobReplyEndedBilledTotalsItem],  # Charge per currency; empty when nothing was billed.
})

# Set once the job's JobEnded is recorded: nothing more happens to it, `state` is its final outcome and `outputs` its final outputs.
GetJobReplyEnded = TypedDict("GetJobReplyEnded", {
    "endedAt": str,  # JobEnded.endedAt: when the job was found over.
    "billed": GetJobReplyEndedBilled,  # What the ledger billed for the job, all attempts together.
})

# One problem with an input: where, what, and how to fix it.
GetJobReplyRejectionIssuesItem = TypedDict("GetJobReplyRejectionIssuesItem", {
    "path": str,  # Dotted path of the field, e.g. `request.gpus`; empty for the whole input.
    "message": str,  # What is wrong.
    "fix": NotRequired[str],  # What to do about it.
})

# Why the job was rejected, when it was.
GetJobReplyRejection = TypedDict("GetJobReplyRejection", {
    "reason": Literal["invalid_spec", "unsatisfiable", "quota_exceeded", "deadline_unreachable"],  # Rejection reason, as in JobRejected.
    "message": str,  # What went wrong, for people.
    "issues": List[GetJobReplyRejectionIssuesItem],  # Fields at fault, each with its fix.
})

GetJobReplyTimelineItem = TypedDict("GetJobReplyTimelineItem", {
    "type": str,  # Event type, e.g. `JobStarted`.
    "at": str,  # The time the event states (agent clock for agent events).
    "attemptId": NotRequired[str],  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
})

# Everything intake knows about one job.
GetJobReply = TypedDict("GetJobReply", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "name": NotRequired[str],  # The spec's label, if any.
    "state": Literal["submitted", "staged", "placed", "running", "finishing", "completed", "failed", "timeout", "cancelled", "node_lost", "deadline", "rejected"],  # `submitted`: waiting for inputs to stage; `staged`: waiting for a node; `placed`: GPUs chosen or held; `running`: the process runs; `finishing`: ended, outputs 
    "outcome": NotRequired[Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"]],  # How the last attempt ended; absent until one did.
    "exitCode": NotRequired[Union[int, None]],  # Exit code of the last attempt; null when killed by a signal.
    "limit": NotRequired[Literal["disk_limit", "memory_limit"]],  # Set when the last attempt was stopped at one of its caps, e.g. `disk_limit`.
    "cancelRequested": bool,  # True once a cancel was accepted.
    "spec": GetJobReplySpec,  # A job spec as messages carry it: defaults filled, durations in integer ms.
    "submittedAt": str,  # When intake accepted the job.
    "deadlineAt": NotRequired[str],  # The deadline as an instant, if the spec has one.
    "quote": NotRequired[GetJobReplyQuote],  # The first start quoted for the job, as recorded: the estimate it was submitted on or its deadline was accepted on (JobSubmitted), else the first start shown whi
    "updatedAt": str,  # Time of the latest event applied to this view.
    "attempts": List[GetJobReplyAttemptsItem],  # Run attempts, oldest first.
    "outputs": NotRequired[GetJobReplyOutputs],  # Stored outputs, once OutputsStored.
    "ended": NotRequired[GetJobReplyEnded],  # Set once the job's JobEnded is recorded: nothing more happens to it, `state` is its final outcome and `outputs` its final outputs.
    "rejection": NotRequired[GetJobReplyRejection],  # Why the job was rejected, when it was.
    "timeline": List[GetJobReplyTimelineItem],  # Every event of the job, in order.
})

# The jobs waiting for GPUs, in line with why each waits, and the nodes with their free GPUs. Subject: `gpunet.qry.placement.GetQueue`. Schema version 1.
GetQueue = TypedDict("GetQueue", {
    "team": NotRequired[str],  # Only this team's jobs (their place in line stays global). Default: every team.
    "jobId": NotRequired[str],  # Only this job, e.g. to show its place in line.
    "limit": NotRequired[int],  # Most jobs listed, 1–1000. Default 100.
})

GetQueueReplyPendingItem = TypedDict("GetQueueReplyPendingItem", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "position": int,  # Place in line, 1 first (submit order).
    "reason": str,  # Why it waits, a Slurm-style code: `Inputs` (not staged yet), `Resources` (no node has enough free GPUs of its model), `Priority` (higher jobs hold every reserva
    "gpus": int,  # GPUs requested.
    "gpuModel": NotRequired[str],  # GPU model requested, if any.
    "attempt": int,  # Number of the attempt it waits for (2 or more after a requeue).
    "submittedAt": str,  # When intake accepted the job.
    "rank": NotRequired[int],  # Its rank by priority among the placeable jobs in the current plan.
    "expectedStart": NotRequired[str],  # When the current plan expects it to start, if it can tell (its reservation, or now).
    "reasonDetail": NotRequired[str],  # The figures behind the reason, when it has some, e.g. for `QuotaExceeded` the quota, what is in use and the GPU-hours used this month.
})

GetQueueReplyNodesItem = TypedDict("GetQueueReplyNodesItem", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpus": int,  # GPUs the node offers.
    "gpuModels": List[str],  # Models among them.
    "freeGpuIndices": List[int],  # GPUs held by no attempt.
    "lastHeartbeatAt": NotRequired[str],  # When placement last heard from the node (placement clock).
})

# The queue as placement sees it.
GetQueueReply = TypedDict("GetQueueReply", {
    "pending": List[GetQueueReplyPendingItem],  # Waiting jobs, first in line first.
    "totalPending": int,  # All waiting jobs, before the filters and the limit.
    "nodes": List[GetQueueReplyNodesItem],  # Registered nodes, in placement order.
    "at": str,  # When this answer was made.
})

# GPU quotas and their use (own team; `billing`: any). Same as `GET /v1/quotas`. Subject: `gpunet.qry.intake.GetQuotas`. Schema version 1.
GetQuotas = TypedDict("GetQuotas", {
    "team": NotRequired[str],  # Only this team. Keys other than `billing` see their own team only.
})

# One team's quota for one GPU model, and its use.
GetQuotasReplyQuotasItem = TypedDict("GetQuotasReplyQuotasItem", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": Union[int, None],  # Concurrent GPU quota; null: no limit.
    "gpuHours": Union[int, None],  # GPU-hours per month; null: no limit.
    "borrow": bool,  # Whether the team may borrow idle GPUs past `gpus`.
    "inUse": int,  # GPUs of the model the team's attempts hold now (placed until released), borrowed ones included.
    "borrowed": int,  # Of those, GPUs held by attempts placed as borrowed (past the quota).
    "heldMs": int,  # GPU-ms of the model the team's attempts held this month (UTC) so far, running ones up to now.
    "waiting": int,  # The team's queued jobs of the model held back by this quota now.
    "setAt": NotRequired[str],  # When the quota was set; absent for a team with usage but no quota.
})

# GPU quotas and their use.
GetQuotasReply = TypedDict("GetQuotasReply", {
    "month": str,  # A calendar month (UTC), e.g. `2026-12`.
    "quotas": List[GetQuotasReplyQuotasItem],  # By team, then model: every quota set, and every team with GPUs in use on a model.
    "at": str,  # When this answer was made (placement clock).
})

# One team (role `operator`, or `admin` for its own). Same as `GET /v1/teams/{team}`. Subject: `gpunet.qry.intake.GetTeam`. Schema version 1.
GetTeam = TypedDict("GetTeam", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# The API key that made the change (its id and team), never the key itself.
GetTeamReplyCreatedBy = TypedDict("GetTeamReplyCreatedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# The API key that made the change (its id and team), never the key itself.
GetTeamReplyDisabledBy = TypedDict("GetTeamReplyDisabledBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# Present when the team is disabled.
GetTeamReplyDisabled = TypedDict("GetTeamReplyDisabled", {
    "by": GetTeamReplyDisabledBy,  # The API key that made the change (its id and team), never the key itself.
    "at": str,  # UTC instant, ISO-8601 with `Z`.
    "reason": NotRequired[str],  # Why, as recorded.
})

# A team.
GetTeamReply = TypedDict("GetTeamReply", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "displayName": str,  # Name for people (the id when none was given).
    "timeZone": NotRequired[str],  # IANA time zone of the team, if set.
    "contact": NotRequired[str],  # Who to reach about the team, if set.
    "source": Literal["events", "file"],  # `events`: created with `CreateTeam`; `file`: named by a key of the bootstrap key file.
    "createdBy": NotRequired[GetTeamReplyCreatedBy],  # The API key that made the change (its id and team), never the key itself.
    "createdAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "disabled": NotRequired[GetTeamReplyDisabled],  # Present when the team is disabled.
    "activeKeys": int,  # Keys of the team that are neither revoked nor expired.
})

Health = Dict[str, Any]

HealthReplyChecksItem = TypedDict("HealthReplyChecksItem", {
    "name": str,  # What was checked, e.g. `event-store`.
    "ok": bool,  # Whether it works.
    "detail": NotRequired[str],  # What is wrong, when it does not.
})

# A service's health.
HealthReply = TypedDict("HealthReply", {
    "service": Literal["intake", "placement", "execution", "storage", "ledger"],  # Which service answered.
    "instance": NotRequired[str],  # Which process answered (e.g. the node id of an execution agent).
    "status": Literal["ok", "degraded", "failing"],  # `ok`; `degraded`: works with a problem (see checks); `failing`: cannot do its work.
    "version": NotRequired[str],  # Software version of the service.
    "startedAt": str,  # When the process started.
    "uptimeMs": int,  # Time since start, in ms.
    "checks": List[HealthReplyChecksItem],  # Each dependency checked.
    "checkedAt": str,  # When this answer was made.
})

InputsStagedDataInputsItem = TypedDict("InputsStagedDataInputsItem", {
    "name": str,  # Input name from the spec.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

# Every input of the job is in the object store and verified. Placement may now hold compute for it.
InputsStagedData = TypedDict("InputsStagedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "inputs": List[InputsStagedDataInputsItem],  # Every input of the spec, now present in the object store and verified against its sha256 and size.
    "totalBytes": int,  # Sum of the input sizes.
    "stagedAt": str,  # When the last input was verified.
})

# Metadata every event carries; covered by the hash chain.
InputsStagedMetadata = TypedDict("InputsStagedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# Every input of the job is in the object store and verified. Placement may now hold compute for it. Subject: `gpunet.evt.InputsStaged.*.*`. Schema version 1.
InputsStaged = TypedDict("InputsStaged", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["InputsStaged"],  # Always `InputsStaged`.
    "data": InputsStagedData,  # Every input of the job is in the object store and verified. Placement may now hold compute for it.
    "metadata": InputsStagedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# One attempt on one node, as billed.
InvoiceFinalizedDataInvoiceLinesItem = TypedDict("InvoiceFinalizedDataInvoiceLinesItem", {
    "lineId": str,  # `<attemptId>@<nodeId>`: one line per attempt per node (a multi-node attempt has one line per node).
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "run": NotRequired[int],  # Run number of the attempt (1 for the first), when the attempt id says it.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": int,  # Number of GPUs, a whole number ≥ 1.
    "gpuIndices": List[int],  # GPU indices on the node, each once; the job sees them through `CUDA_VISIBLE_DEVICES`.
    "outcome": Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"],  # How the attempt ended: `completed` (exit 0), `failed` (non-zero exit or could not start), `timeout` (time limit hit, killed), `cancelled` (on request), `node_lo
    "heldFrom": str,  # ComputeHeld.heldAt (agent clock).
    "finishedAt": str,  # JobFinished.finishedAt (same agent clock).
    "billableMs": int,  # finishedAt − heldFrom, never negative; 0 when waived.
    "rateMicrosPerGpuHour": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "priceListVersion": int,  # Version of the price list the rate came from (0 never: a what-if list is version ≥ 1 too).
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # gpus × billableMs × rate / 3,600,000 rounded once half up, raised to the minimum charge if any; 0 when waived.
    "minimumApplied": bool,  # True when the minimum charge replaced the rounded amount.
    "waivedReason": NotRequired[Literal["platform_fault"]],  # Why the line is not charged (`platform_fault`: the node was lost).
    "lateFrom": NotRequired[str],  # The month the attempt finished in, when that month's invoice was already finalized before the line was complete.
    "completedAtPosition": str,  # Store position of the later of ComputeHeld and JobFinished: when the line became complete.
    "eventIds": List[str],  # Contributing events: ComputeHeld, JobFinished, then the price list, the NodeLost and the JobSubmitted when used.
})

InvoiceFinalizedDataInvoiceTotalsItem = TypedDict("InvoiceFinalizedDataInvoiceTotalsItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Sum of the lines' amounts (never rounded again).
    "billableMs": int,  # Sum of the lines' billable ms.
    "lines": int,  # Number of lines in this currency.
})

# One side of a double-entry posting.
InvoiceFinalizedDataInvoicePostingsItem = TypedDict("InvoiceFinalizedDataInvoicePostingsItem", {
    "account": str,  # `receivable:<team>` or `revenue:compute`.
    "side": Literal["debit", "credit"],  # `debit` or `credit`.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "ref": str,  # The invoice or credit note it posts.
})

# An invoice as derived from the store at a position.
InvoiceFinalizedDataInvoice = TypedDict("InvoiceFinalizedDataInvoice", {
    "invoiceId": str,  # Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "month": str,  # Calendar month in UTC, `YYYY-MM`.
    "periodStart": str,  # First instant of the month (UTC).
    "periodEnd": str,  # First instant of the next month (UTC), exclusive.
    "derivedAtPosition": str,  # Store position the invoice was derived at: replaying the store up to it gives the same invoice.
    "rounding": str,  # The rounding rule, `per-line-half-up-micros`.
    "lines": List[InvoiceFinalizedDataInvoiceLinesItem],  # Ordered by finishedAt, heldFrom, jobId, attemptId, nodeId.
    "totals": List[InvoiceFinalizedDataInvoiceTotalsItem],  # Per currency, in the order currencies first appear.
    "postings": List[InvoiceFinalizedDataInvoicePostingsItem],  # Debit receivable:<team>, credit revenue:compute, per currency.
})

# A team's invoice for a month, frozen after the late-event cutoff: its lines, totals, postings and the store position it was derived at. Never changed.
InvoiceFinalizedData = TypedDict("InvoiceFinalizedData", {
    "invoice": InvoiceFinalizedDataInvoice,  # An invoice as derived from the store at a position.
    "finalizedAt": str,  # When the ledger finalized it (its clock), at or after the month end plus the late-event cutoff.
    "cutoffMs": int,  # The late-event cutoff in force.
})

# Metadata every event carries; covered by the hash chain.
InvoiceFinalizedMetadata = TypedDict("InvoiceFinalizedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A team's invoice for a month, frozen after the late-event cutoff: its lines, totals, postings and the store position it was derived at. Never changed. Subject: `gpunet.evt.InvoiceFinalized.*.*`. Schema version 1.
InvoiceFinalized = TypedDict("InvoiceFinalized", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["InvoiceFinalized"],  # Always `InvoiceFinalized`.
    "data": InvoiceFinalizedData,  # A team's invoice for a month, frozen after the late-event cutoff: its lines, totals, postings and the store position it was derived at. Never changed.
    "metadata": InvoiceFinalizedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# Operator: a one-time token a machine may join as this node with (NodeJoinTokenIssued; only the secret's hash is sent and kept). Subject: `gpunet.cmd.IssueJoinToken`. Schema version 1.
IssueJoinToken = TypedDict("IssueJoinToken", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "secretSha256": str,  # sha256 (hex) of the one-time secret the operator's CLI made; the secret never crosses the bus.
    "expiresAt": str,  # UTC instant, ISO-8601 with `Z`.
    "issuedBy": NotRequired[str],  # Who issues it, for the record.
})

# Reply to IssueJoinToken.
IssueJoinTokenReply = TypedDict("IssueJoinTokenReply", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "tokenId": str,  # First 16 hex digits of the sha256 of the token's secret: names the token in the record.
    "expiresAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# The team asked to cancel the job. A queued job ends at once; a running one is stopped by its agent.
JobCancelRequestedData = TypedDict("JobCancelRequestedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "reason": NotRequired[str],  # Why, as the requester gave it.
    "requestedBy": NotRequired[str],  # Id of the API key (not the key itself) that asked.
    "requestedAt": str,  # When intake accepted the request.
})

# Metadata every event carries; covered by the hash chain.
JobCancelRequestedMetadata = TypedDict("JobCancelRequestedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The team asked to cancel the job. A queued job ends at once; a running one is stopped by its agent. Subject: `gpunet.evt.JobCancelRequested.*.*`. Schema version 1.
JobCancelRequested = TypedDict("JobCancelRequested", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["JobCancelRequested"],  # Always `JobCancelRequested`.
    "data": JobCancelRequestedData,  # The team asked to cancel the job. A queued job ends at once; a running one is stopped by its agent.
    "metadata": JobCancelRequestedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# The job wrote a checkpoint; a later attempt may resume from it.
JobCheckpointedData = TypedDict("JobCheckpointedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "sequence": int,  # Checkpoint number within the job, increasing across attempts.
    "sha256": NotRequired[str],  # Content address of the stored checkpoint (folder manifest), once stored.
    "size": NotRequired[int],  # Total bytes of the checkpoint files.
    "checkpointedAt": str,  # Agent clock: when the checkpoint was taken.
})

# Metadata every event carries; covered by the hash chain.
JobCheckpointedMetadata = TypedDict("JobCheckpointedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The job wrote a checkpoint; a later attempt may resume from it. Subject: `gpunet.evt.JobCheckpointed.*.*`. Schema version 1.
JobCheckpointed = TypedDict("JobCheckpointed", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["JobCheckpointed"],  # Always `JobCheckpointed`.
    "data": JobCheckpointedData,  # The job wrote a checkpoint; a later attempt may resume from it.
    "metadata": JobCheckpointedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

JobEndedDataBilledTotalsItem = TypedDict("JobEndedDataBilledTotalsItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
})

# What the ledger billed for the job, all attempts together: the sum of its `UsageRecorded` lines.
JobEndedDataBilled = TypedDict("JobEndedDataBilled", {
    "billableMs": int,  # Billable time over every attempt and node, ms (GPU count not multiplied in).
    "totals": List[JobEndedDataBilledTotalsItem],  # Charge per currency over every usage line of the job; empty when nothing was billed.
})

# One output file: where the job wrote it and its content address.
JobEndedDataOutputs1FilesItem = TypedDict("JobEndedDataOutputs1FilesItem", {
    "path": str,  # Path relative to `GPUNET_OUTPUT_DIR`, with `/` separators.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

JobEndedDataOutputs1 = TypedDict("JobEndedDataOutputs1", {
    "files": List[JobEndedDataOutputs1FilesItem],  # Stored output files, by content address.
    "totalBytes": int,  # Sum of their sizes.
    "rejected": int,  # How many files matching the globs were refused (listed in `OutputsStored`).
})

# The job is over: nothing more will happen to it. Recorded exactly once per job (stream `ledger-job-<jobId>`) on every path — its last attempt ended and released (not lost, not retried), withdrawn from the queue (cancelled, deadline, or cancelled after a lost or retried attempt), staging failed, reje
JobEndedData = TypedDict("JobEndedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "outcome": Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline", "rejected"],  # The job's final outcome: its last attempt's (`completed`, `failed`, `timeout`, `cancelled`, `node_lost`), `cancelled` or `deadline` when it left the queue witho
    "reason": NotRequired[str],  # Why, for people, when the outcome is not `completed` (the agent's, staging's or the rejection's message).
    "attempts": int,  # Run attempts made (0 when it never held compute).
    "exitCode": NotRequired[Union[int, None]],  # Exit code of the last attempt; null when killed by a signal; absent when it never ran.
    "billed": JobEndedDataBilled,  # What the ledger billed for the job, all attempts together: the sum of its `UsageRecorded` lines.
    "outputs": Union[JobEndedDataOutputs1, None],  # The outputs stored for the job, or null when none were (it never ran, or its attempt stored none).
    "endedAt": str,  # When the job was found over: nothing more happens to it after this event.
})

# Metadata every event carries; covered by the hash chain.
JobEndedMetadata = TypedDict("JobEndedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The job is over: nothing more will happen to it. Recorded exactly once per job (stream `ledger-job-<jobId>`) on every path — its last attempt ended and released (not lost, not retried), withdrawn from the queue (cancelled, deadline, or cancelled after a lost or retried attempt), staging failed, reje
JobEnded = TypedDict("JobEnded", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["JobEnded"],  # Always `JobEnded`.
    "data": JobEndedData,  # The job is over: nothing more will happen to it. Recorded exactly once per job (stream `ledger-job-<jobId>`) on every path — its last attempt ended and released
    "metadata": JobEndedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# The attempt ended, with its outcome and exit code. Billable time ends at finishedAt.
JobFinishedData = TypedDict("JobFinishedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "outcome": Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"],  # How the attempt ended: `completed` (exit 0), `failed` (non-zero exit or could not start), `timeout` (time limit hit, killed), `cancelled` (on request), `node_lo
    "exitCode": Union[int, None],  # Exit code of the job's process; null when it died by a signal or never ran.
    "signal": NotRequired[Union[str, None]],  # Signal that ended the process (e.g. `SIGKILL`), or null.
    "message": NotRequired[str],  # Detail for people, e.g. why it could not start.
    "finishedAt": str,  # Agent clock: when the process ended (or the attempt was given up). Billing stops here.
    "limit": NotRequired[Literal["disk_limit", "memory_limit"]],  # Set when the agent stopped the job at one of its caps: `disk_limit` (it filled more disk than its `resources.disk`), `memory_limit` (the kernel killed a process
    "peerEnded": NotRequired[str],  # Multi-node gangs only: the agent stopped this node's part because the part on that node ended first (rank 0 ended, a part failed, or its node was lost). Such a 
})

# Metadata every event carries; covered by the hash chain.
JobFinishedMetadata = TypedDict("JobFinishedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The attempt ended, with its outcome and exit code. Billable time ends at finishedAt. Subject: `gpunet.evt.JobFinished.*.*`. Schema version 1.
JobFinished = TypedDict("JobFinished", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["JobFinished"],  # Always `JobFinished`.
    "data": JobFinishedData,  # The attempt ended, with its outcome and exit code. Billable time ends at finishedAt.
    "metadata": JobFinishedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

JobPlacedDataNodesItem = TypedDict("JobPlacedDataNodesItem", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuIndices": List[int],  # GPU indices on the node, each once; the job sees them through `CUDA_VISIBLE_DEVICES`.
})

# The first start time placement quoted for this job, if it quoted one: with `placedAt`, the quote's error.
JobPlacedDataQuote = TypedDict("JobPlacedDataQuote", {
    "expectedStart": str,  # The start placement quoted.
    "quotedAt": str,  # When it first quoted it (to `gpunet status` or an estimate of this job).
    "expectedEnd": NotRequired[str],  # The end it quoted with it, when it quoted one (the estimate the job was submitted on, or its deadline accepted on).
})

# Placement chose a node and concrete GPU indices for one attempt of the job.
JobPlacedData = TypedDict("JobPlacedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "attempt": int,  # Attempt number, 1 for the first run, +1 per requeue.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuIndices": List[int],  # GPU indices on the node, each once; the job sees them through `CUDA_VISIBLE_DEVICES`.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "placedAt": str,  # When placement chose the node.
    "reason": NotRequired[str],  # Why this node among those that fit, when it is not just the first free one, e.g. that its cache already holds the job's inputs.
    "nodes": NotRequired[List[JobPlacedDataNodesItem]],  # A multi-node gang: every node of the attempt in rank order, all of `gpuModel`. `nodes[0]` is `nodeId`/`gpuIndices` (rank 0, which collects the outputs). Absent 
    "predictedRunMs": NotRequired[int],  # Placement's run-time prediction for this attempt (the mean of the team's last similar runs, at most the time limit): when it expects the job to end. The time li
    "quote": NotRequired[JobPlacedDataQuote],  # The first start time placement quoted for this job, if it quoted one: with `placedAt`, the quote's error.
    "deadlineNote": NotRequired[str],  # Set when the job has a deadline that running to its time limit from now would miss: the facts of why (when it starts, against what was quoted).
    "borrowed": NotRequired[Literal[True]],  # The attempt takes its team past its concurrent GPU quota for the model, on GPUs no other team with quota room was waiting for (borrowing, decision 0027). Absent
})

# Metadata every event carries; covered by the hash chain.
JobPlacedMetadata = TypedDict("JobPlacedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# Placement chose a node and concrete GPU indices for one attempt of the job. Subject: `gpunet.evt.JobPlaced.*.*`. Schema version 1.
JobPlaced = TypedDict("JobPlaced", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["JobPlaced"],  # Always `JobPlaced`.
    "data": JobPlacedData,  # Placement chose a node and concrete GPU indices for one attempt of the job.
    "metadata": JobPlacedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# The first start placement showed for a waiting job (status, the queue API, the console): recorded when shown, so the quote survives a restart and, with the JobPlaced that follows, its error is known. Later quotes of the same job are not recorded; an accepted deadline's estimate is in JobSubmitted.
JobQuotedData = TypedDict("JobQuotedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "expectedStart": str,  # The start placement quoted: the live plan's expected start for the waiting job.
    "quotedAt": str,  # When it was quoted (shown by `gpunet status`, the queue API or the console).
})

# Metadata every event carries; covered by the hash chain.
JobQuotedMetadata = TypedDict("JobQuotedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The first start placement showed for a waiting job (status, the queue API, the console): recorded when shown, so the quote survives a restart and, with the JobPlaced that follows, its error is known. Later quotes of the same job are not recorded; an accepted deadline's estimate is in JobSubmitted. S
JobQuoted = TypedDict("JobQuoted", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["JobQuoted"],  # Always `JobQuoted`.
    "data": JobQuotedData,  # The first start placement showed for a waiting job (status, the queue API, the console): recorded when shown, so the quote survives a restart and, with the JobP
    "metadata": JobQuotedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# One problem with an input: where, what, and how to fix it.
JobRejectedDataIssuesItem = TypedDict("JobRejectedDataIssuesItem", {
    "path": str,  # Dotted path of the field, e.g. `request.gpus`; empty for the whole input.
    "message": str,  # What is wrong.
    "fix": NotRequired[str],  # What to do about it.
})

# The job will never run (a business rule failed after the schema passed). Nothing is billed.
JobRejectedData = TypedDict("JobRejectedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "reason": Literal["invalid_spec", "unsatisfiable", "quota_exceeded", "deadline_unreachable"],  # `invalid_spec`: a rule beyond the schema failed; `unsatisfiable`: no node can ever meet the request; `quota_exceeded`: the team's limits; `deadline_unreachable`
    "message": str,  # What went wrong, for people.
    "issues": NotRequired[List[JobRejectedDataIssuesItem]],  # Fields at fault, each with its fix.
    "rejectedAt": str,  # When the job was rejected.
})

# Metadata every event carries; covered by the hash chain.
JobRejectedMetadata = TypedDict("JobRejectedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The job will never run (a business rule failed after the schema passed). Nothing is billed. Subject: `gpunet.evt.JobRejected.*.*`. Schema version 1.
JobRejected = TypedDict("JobRejected", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["JobRejected"],  # Always `JobRejected`.
    "data": JobRejectedData,  # The job will never run (a business rule failed after the schema passed). Nothing is billed.
    "metadata": JobRejectedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# An attempt was lost through no fault of the job; the job waits for a new placement.
JobRequeuedData = TypedDict("JobRequeuedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "previousAttemptId": str,  # The attempt that did not finish.
    "reason": Literal["node_lost", "agent_restarted", "preempted", "retry"],  # Why the job goes back to the queue; `retry`: it failed with an exit code its retry policy names.
    "nextAttempt": int,  # Number of the attempt to come.
    "requeuedAt": str,  # When the job went back to the queue.
})

# Metadata every event carries; covered by the hash chain.
JobRequeuedMetadata = TypedDict("JobRequeuedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# An attempt was lost through no fault of the job; the job waits for a new placement. Subject: `gpunet.evt.JobRequeued.*.*`. Schema version 1.
JobRequeued = TypedDict("JobRequeued", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["JobRequeued"],  # Always `JobRequeued`.
    "data": JobRequeuedData,  # An attempt was lost through no fault of the job; the job waits for a new placement.
    "metadata": JobRequeuedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

JobSpecWork1Script1 = TypedDict("JobSpecWork1Script1", {
    "path": str,  # Path of the script inside the job's inputs (relative to `GPUNET_INPUT_DIR`), e.g. `code/train.sh`.
})

JobSpecWork1Script2 = TypedDict("JobSpecWork1Script2", {
    "inline": str,  # The script text itself; the agent writes it to a file in the run's work directory.
})

# Run a script as a process on the node.
JobSpecWork1 = TypedDict("JobSpecWork1", {
    "kind": Literal["script"],  # A script run as a process on the node.
    "script": Union[JobSpecWork1Script1, JobSpecWork1Script2],  # Where the script comes from: `{ path }` inside the inputs, or `{ inline }` text.
    "interpreter": NotRequired[str],  # Program that runs the script, e.g. `bash` or `python3`. Default: the script's `#!` line, else `sh`.
    "args": NotRequired[List[str]],  # Arguments passed to the script.
    "env": NotRequired[Dict[str, str]],  # Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.
})

# The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is held) and loaded there; `image` is then its name for people. Absent: `image` is pulled by the node when it does not hold it.
JobSpecWork2Archive = TypedDict("JobSpecWork2Archive", {
    "sha256": str,  # sha256 of the image archive (`podman save` / `docker save` / OCI archive) as `gpunet image push` stored it in the team's blobs.
    "size": int,  # Size in bytes of the archive.
    "keep": NotRequired[str],  # How long the node keeps the staged archive after the job, e.g. `1d`, so later jobs start from its cache; absent: removed at release when no job needs it.
})

# Run a container image on the node.
JobSpecWork2 = TypedDict("JobSpecWork2", {
    "kind": Literal["container"],  # A container image run on the node.
    "image": str,  # Container image reference, e.g. `ghcr.io/acme/train:1.4` (pin a digest for reproducible runs).
    "archive": NotRequired[JobSpecWork2Archive],  # The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is hel
    "command": NotRequired[List[str]],  # Overrides the image's entrypoint; default: the image's own.
    "args": NotRequired[List[str]],  # Arguments passed after the command.
    "env": NotRequired[Dict[str, str]],  # Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.
})

# One input: a file or folder by content address, placed at `path` under `GPUNET_INPUT_DIR`.
JobSpecDataInputsItem = TypedDict("JobSpecDataInputsItem", {
    "name": str,  # Name of the input, unique within the job, e.g. `dataset`.
    "path": str,  # Where the input appears, relative to `GPUNET_INPUT_DIR` (read-only), e.g. `data/train`; not `.` (the directory itself).
    "kind": NotRequired[Literal["file", "folder"]],  # `file`: sha256 addresses the file's bytes. `folder`: sha256 addresses the folder manifest (see FolderManifest).
    "sha256": str,  # Content address: sha256 of the file, or of the folder manifest for a folder.
    "size": int,  # Size in bytes of the blob that sha256 addresses (the file, or the folder manifest).
    "keep": NotRequired[str],  # Keep the staged input this long after the job, so related jobs reuse it, e.g. `7d`. Default: removed at release.
    "dataset": NotRequired[str],  # Name the input as one of the team's datasets, e.g. `imagenet-2012`: it is kept for related jobs (in the object store and in node caches) until a later job of th
})

# What the job reads.
JobSpecData = TypedDict("JobSpecData", {
    "inputs": NotRequired[List[JobSpecDataInputsItem]],  # Files and folders the job reads, by content address; staged before compute is held (staging is not billed).
})

# A signal before the time limit, so the job can checkpoint and exit; then SIGTERM at the limit, grace, SIGKILL.
JobSpecRequestWarning = TypedDict("JobSpecRequestWarning", {
    "signal": NotRequired[Literal["SIGUSR1", "SIGUSR2", "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGWINCH"]],  # Signal sent to the job's process group, e.g. `SIGUSR1`.
    "before": str,  # How long before the time limit the signal comes, e.g. `60s`.
})

# What the job needs: GPUs, model, time limit, deadline, network.
JobSpecRequest = TypedDict("JobSpecRequest", {
    "gpus": int,  # Number of GPUs, a whole number ≥ 1, e.g. `gpus: 2`. All on one node.
    "gpuModel": NotRequired[str],  # Required GPU model, e.g. `A100-80GB`. Default: any model.
    "timeLimit": str,  # Longest the job may run once started, e.g. `2h`, `90m`, `1h30m` (units ms, s, m, h, d; at most 30d). At the limit it gets SIGTERM, then SIGKILL.
    "deadline": NotRequired[str],  # When the job must be finished by, as written: an ISO-8601 time (`2025-07-01T18:00:00Z`), a duration from submission (`+6h`, `in 90m`), or a phrase in the team's
    "network": NotRequired[bool],  # Whether the job may use the network. Default `false`: no network.
    "warning": NotRequired[JobSpecRequestWarning],  # A signal before the time limit, so the job can checkpoint and exit; then SIGTERM at the limit, grace, SIGKILL.
})

# Which files of the run to keep.
JobSpecOutputs = TypedDict("JobSpecOutputs", {
    "globs": List[str],  # Glob patterns, relative to `GPUNET_OUTPUT_DIR`, of the files to keep after the run, e.g. `model/**`.
    "maxBytes": NotRequired[int],  # Most bytes of output to keep; files beyond it are skipped and the result is marked truncated.
})

# Run the job again when it fails with one of these exit codes, up to maxAttempts.
JobSpecRetry = TypedDict("JobSpecRetry", {
    "exitCodes": List[int],  # Exit codes after which the job is run again (from its last checkpoint), e.g. `[75]`. Other failures end the job.
    "maxAttempts": int,  # Most attempts that may end in one of `exitCodes`, the first one included; attempts lost with their node do not count.
})

# Saving `GPUNET_CHECKPOINT_DIR`; a later attempt of the job starts with the last saved checkpoint.
JobSpecCheckpoint = TypedDict("JobSpecCheckpoint", {
    "interval": str,  # How often `GPUNET_CHECKPOINT_DIR` is saved while the job runs, e.g. `10m` (it is always saved when the job ends).
})

# Caps on memory and disk; each defaults to the node's share per GPU.
JobSpecResources = TypedDict("JobSpecResources", {
    "memory": NotRequired[Union[str, int]],  # Most memory the job may use (its processes and what it keeps in /tmp and /dev/shm), e.g. `16GiB`; beyond it the kernel kills a process of the job. Default: the 
    "disk": NotRequired[Union[str, int]],  # Most disk the job may fill (work, outputs, checkpoints, /tmp), e.g. `100GiB`; beyond it the job is stopped (`failed`, limit `disk_limit`). Default: the node's d
})

# A job spec as people write it (`job.yaml`, `POST /v1/jobs` `spec`, `SubmitJob.spec`).
JobSpec = TypedDict("JobSpec", {
    "name": NotRequired[str],  # A label for people, e.g. `resnet50-finetune`; not unique.
    "work": Union[JobSpecWork1, JobSpecWork2],  # What to run: a script (`kind: script`) or a container image (`kind: container`).
    "data": NotRequired[JobSpecData],  # What the job reads.
    "request": JobSpecRequest,  # What the job needs: GPUs, model, time limit, deadline, network.
    "outputs": NotRequired[JobSpecOutputs],  # Which files of the run to keep.
    "retry": NotRequired[JobSpecRetry],  # Run the job again when it fails with one of these exit codes, up to maxAttempts.
    "checkpoint": NotRequired[JobSpecCheckpoint],  # Saving `GPUNET_CHECKPOINT_DIR`; a later attempt of the job starts with the last saved checkpoint.
    "resources": NotRequired[JobSpecResources],  # Caps on memory and disk; each defaults to the node's share per GPU.
})

# The GPUs handed to a container and how; absent for scripts and jobs without GPUs.
JobStartedDataWorkGpus = TypedDict("JobStartedDataWorkGpus", {
    "mode": Literal["cdi", "devices", "slots"],  # How the held GPUs reached the container: NVIDIA CDI names, `/dev/nvidia*` device nodes, or declared slots in `CUDA_VISIBLE_DEVICES` only.
    "devices": List[str],  # What was handed over: CDI names (`nvidia.com/gpu=0`), device paths, or slot indices.
})

# What exactly ran, by content address.
JobStartedDataWork = TypedDict("JobStartedDataWork", {
    "kind": Literal["script", "container"],  # What ran: a script or a container image.
    "digest": str,  # For the audit: `sha256:` of the script file that ran, or the image digest the container runtime resolved.
    "runtime": NotRequired[str],  # Container runtime that ran the image, e.g. `docker`; absent for scripts.
    "image": NotRequired[str],  # The image reference the job asked for (for people); `digest` is what ran. Absent for scripts.
    "archive": NotRequired[str],  # sha256 of the image archive staged and loaded for it (`work.archive`), when the image came as data.
    "gpus": NotRequired[JobStartedDataWorkGpus],  # The GPUs handed to a container and how; absent for scripts and jobs without GPUs.
})

# The job's process started on the node.
JobStartedData = TypedDict("JobStartedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "startedAt": str,  # Agent clock: when the job's process started.
    "resumedFromCheckpoint": NotRequired[int],  # Sequence of the checkpoint this attempt resumed from, if any.
    "work": NotRequired[JobStartedDataWork],  # What exactly ran, by content address.
})

# Metadata every event carries; covered by the hash chain.
JobStartedMetadata = TypedDict("JobStartedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The job's process started on the node. Subject: `gpunet.evt.JobStarted.*.*`. Schema version 1.
JobStarted = TypedDict("JobStarted", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["JobStarted"],  # Always `JobStarted`.
    "data": JobStartedData,  # The job's process started on the node.
    "metadata": JobStartedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

JobSubmittedDataSpecWork1Script1 = TypedDict("JobSubmittedDataSpecWork1Script1", {
    "path": str,  # Path of the script inside the job's inputs (relative to `GPUNET_INPUT_DIR`), e.g. `code/train.sh`.
})

JobSubmittedDataSpecWork1Script2 = TypedDict("JobSubmittedDataSpecWork1Script2", {
    "inline": str,  # The script text itself; the agent writes it to a file in the run's work directory.
})

# Run a script as a process on the node.
JobSubmittedDataSpecWork1 = TypedDict("JobSubmittedDataSpecWork1", {
    "kind": Literal["script"],  # A script run as a process on the node.
    "script": Union[JobSubmittedDataSpecWork1Script1, JobSubmittedDataSpecWork1Script2],  # Where the script comes from: `{ path }` inside the inputs, or `{ inline }` text.
    "interpreter": NotRequired[str],  # Program that runs the script, e.g. `bash` or `python3`. Default: the script's `#!` line, else `sh`.
    "args": NotRequired[List[str]],  # Arguments passed to the script.
    "env": NotRequired[Dict[str, str]],  # Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.
})

# The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is held) and loaded there; `image` is then its name for people. Absent: `image` is pulled by the node when it does not hold it.
JobSubmittedDataSpecWork2Archive = TypedDict("JobSubmittedDataSpecWork2Archive", {
    "sha256": str,  # sha256 of the image archive (`podman save` / `docker save` / OCI archive) as `gpunet image push` stored it in the team's blobs.
    "size": int,  # Size in bytes of the archive.
    "keep": NotRequired[str],  # How long the node keeps the staged archive after the job, e.g. `1d`, so later jobs start from its cache; absent: removed at release when no job needs it.
})

# Run a container image on the node.
JobSubmittedDataSpecWork2 = TypedDict("JobSubmittedDataSpecWork2", {
    "kind": Literal["container"],  # A container image run on the node.
    "image": str,  # Container image reference, e.g. `ghcr.io/acme/train:1.4` (pin a digest for reproducible runs).
    "archive": NotRequired[JobSubmittedDataSpecWork2Archive],  # The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is hel
    "command": NotRequired[List[str]],  # Overrides the image's entrypoint; default: the image's own.
    "args": NotRequired[List[str]],  # Arguments passed after the command.
    "env": NotRequired[Dict[str, str]],  # Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.
})

# One input: a file or folder by content address.
JobSubmittedDataSpecDataInputsItem = TypedDict("JobSubmittedDataSpecDataInputsItem", {
    "name": str,  # Name of the input, unique within the job, e.g. `dataset`.
    "path": str,  # Where the input appears, relative to `GPUNET_INPUT_DIR` (read-only), e.g. `data/train`; not `.` (the directory itself).
    "kind": NotRequired[Literal["file", "folder"]],  # `file`: sha256 addresses the file's bytes. `folder`: sha256 addresses the folder manifest (see FolderManifest).
    "sha256": str,  # Content address: sha256 of the file, or of the folder manifest for a folder.
    "size": int,  # Size in bytes of the blob that sha256 addresses (the file, or the folder manifest).
    "keepMs": NotRequired[int],  # How long to keep the staged input after the job, in ms; absent: removed at release.
    "dataset": NotRequired[str],  # Name the input as one of the team's datasets, e.g. `imagenet-2012`: it is kept for related jobs (in the object store and in node caches) until a later job of th
})

# What the job reads.
JobSubmittedDataSpecData = TypedDict("JobSubmittedDataSpecData", {
    "inputs": List[JobSubmittedDataSpecDataInputsItem],  # Files and folders the job reads, by content address; staged before compute is held (staging is not billed).
})

# A signal before the time limit; absent: none.
JobSubmittedDataSpecRequestWarning = TypedDict("JobSubmittedDataSpecRequestWarning", {
    "signal": Literal["SIGUSR1", "SIGUSR2", "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGWINCH"],  # Signal sent to the job's process group, e.g. `SIGUSR1`.
    "beforeMs": int,  # How long before the time limit, in ms.
})

# What the job needs.
JobSubmittedDataSpecRequest = TypedDict("JobSubmittedDataSpecRequest", {
    "gpus": int,  # Number of GPUs, a whole number ≥ 1.
    "gpuModel": NotRequired[str],  # Required GPU model; absent: any model.
    "timeLimitMs": int,  # Longest the job may run once started, in ms.
    "deadline": NotRequired[str],  # When the job must be finished by, as written: an ISO-8601 time (`2025-07-01T18:00:00Z`), a duration from submission (`+6h`, `in 90m`), or a phrase in the team's
    "network": bool,  # Whether the job may use the network.
    "warning": NotRequired[JobSubmittedDataSpecRequestWarning],  # A signal before the time limit; absent: none.
})

# Which files of the run to keep.
JobSubmittedDataSpecOutputs = TypedDict("JobSubmittedDataSpecOutputs", {
    "globs": List[str],  # Glob patterns, relative to `GPUNET_OUTPUT_DIR`, of the files to keep after the run, e.g. `model/**`.
    "maxBytes": NotRequired[int],  # Most bytes of output to keep; files beyond it are skipped and the result is marked truncated.
})

# Run the job again when it fails with one of these exit codes, up to maxAttempts.
JobSubmittedDataSpecRetry = TypedDict("JobSubmittedDataSpecRetry", {
    "exitCodes": List[int],  # Exit codes after which the job is run again (from its last checkpoint), e.g. `[75]`. Other failures end the job.
    "maxAttempts": int,  # Most attempts that may end in one of `exitCodes`, the first one included; attempts lost with their node do not count.
})

# Saving the checkpoint directory; absent: the node's default interval.
JobSubmittedDataSpecCheckpoint = TypedDict("JobSubmittedDataSpecCheckpoint", {
    "intervalMs": int,  # How often the checkpoint directory is saved while the job runs, in ms.
})

# Memory and disk caps the job asked for; absent: the node's defaults.
JobSubmittedDataSpecResources = TypedDict("JobSubmittedDataSpecResources", {
    "memoryBytes": NotRequired[int],  # Memory cap in bytes; absent: the node's default per GPU.
    "diskBytes": NotRequired[int],  # Disk cap in bytes; absent: the node's default per GPU.
})

# A job spec as messages carry it: defaults filled, durations in integer ms.
JobSubmittedDataSpec = TypedDict("JobSubmittedDataSpec", {
    "name": NotRequired[str],  # A label for people, e.g. `resnet50-finetune`; not unique.
    "work": Union[JobSubmittedDataSpecWork1, JobSubmittedDataSpecWork2],  # What to run: a script (`kind: script`) or a container image (`kind: container`).
    "data": JobSubmittedDataSpecData,  # What the job reads.
    "request": JobSubmittedDataSpecRequest,  # What the job needs.
    "outputs": JobSubmittedDataSpecOutputs,  # Which files of the run to keep.
    "retry": NotRequired[JobSubmittedDataSpecRetry],  # Run the job again when it fails with one of these exit codes, up to maxAttempts.
    "checkpoint": NotRequired[JobSubmittedDataSpecCheckpoint],  # Saving the checkpoint directory; absent: the node's default interval.
    "resources": NotRequired[JobSubmittedDataSpecResources],  # Memory and disk caps the job asked for; absent: the node's defaults.
})

# The plan's estimate the job was accepted on: the estimate the submit named (`estimateId`, given by `gpunet estimate` before), else the one intake checked the deadline against (jobs with a deadline). With the job's actual start and end, the quote's error. Absent when neither was given, or when placem
JobSubmittedDataQuote = TypedDict("JobSubmittedDataQuote", {
    "expectedStart": str,  # When the plan expected the job to start.
    "expectedEnd": str,  # Its expected start plus the time limit: the latest the plan expected it to end.
    "quotedAt": str,  # When placement gave the estimate.
    "estimateId": NotRequired[str],  # The estimate the submit named (`gpunet submit --estimate`), recorded as EstimateGiven; absent for a deadline's check.
})

# Intake accepted a valid job spec from a team. The job waits for its inputs to be staged.
JobSubmittedData = TypedDict("JobSubmittedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "spec": JobSubmittedDataSpec,  # A job spec as messages carry it: defaults filled, durations in integer ms.
    "submittedAt": str,  # When intake accepted the job.
    "deadlineAt": NotRequired[str],  # The spec's deadline resolved to an instant at submission; absent when the spec has none.
    "idempotencyKey": NotRequired[str],  # The `Idempotency-Key` the job was submitted with, if any.
    "submittedBy": NotRequired[str],  # Id of the API key (not the key itself) that submitted the job.
    "quote": NotRequired[JobSubmittedDataQuote],  # The plan's estimate the job was accepted on: the estimate the submit named (`estimateId`, given by `gpunet estimate` before), else the one intake checked the de
})

# Metadata every event carries; covered by the hash chain.
JobSubmittedMetadata = TypedDict("JobSubmittedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# Intake accepted a valid job spec from a team. The job waits for its inputs to be staged. Subject: `gpunet.evt.JobSubmitted.*.*`. Schema version 1.
JobSubmitted = TypedDict("JobSubmitted", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["JobSubmitted"],  # Always `JobSubmitted`.
    "data": JobSubmittedData,  # Intake accepted a valid job spec from a team. The job waits for its inputs to be staged.
    "metadata": JobSubmittedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# A queued job left the queue without running (cancelled, or its deadline passed): it never held compute, billed 0. Also a cancelled job whose last attempt was lost with its node or failed in a way its retry policy retries: it is not run again (earlier attempts stay billed as they were).
JobWithdrawnData = TypedDict("JobWithdrawnData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "outcome": Literal["cancelled", "deadline"],  # `cancelled`: the team cancelled it while it was queued (or waiting to run again); `deadline`: its deadline passed before it could run.
    "message": NotRequired[str],  # Detail for people.
    "withdrawnAt": str,  # When placement took the job out of the queue.
})

# Metadata every event carries; covered by the hash chain.
JobWithdrawnMetadata = TypedDict("JobWithdrawnMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A queued job left the queue without running (cancelled, or its deadline passed): it never held compute, billed 0. Also a cancelled job whose last attempt was lost with its node or failed in a way its retry policy retries: it is not run again (earlier attempts stay billed as they were). Subject: `gpu
JobWithdrawn = TypedDict("JobWithdrawn", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["JobWithdrawn"],  # Always `JobWithdrawn`.
    "data": JobWithdrawnData,  # A queued job left the queue without running (cancelled, or its deadline passed): it never held compute, billed 0. Also a cancelled job whose last attempt was lo
    "metadata": JobWithdrawnMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# A joining machine (identity `joiner`): spend a join token and enroll the key it made (NodeJoinTokenUsed + NodeEnrolled). Subject: `gpunet.cmd.JoinNode`. Schema version 1.
JoinNode = TypedDict("JoinNode", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "secret": str,  # The token's one-time secret (32 random bytes, base64url).
    "publicKey": str,  # The key the machine made for itself; its seed never leaves the machine.
})

# Reply to JoinNode.
JoinNodeReply = TypedDict("JoinNodeReply", {
    "status": Literal["joined", "refused"],  # `joined`: the token is spent and the key enrolled; `refused`: nothing was recorded.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "publicKey": NotRequired[str],  # The key enrolled (joined).
    "tokenId": NotRequired[str],  # First 16 hex digits of the sha256 of the token's secret: names the token in the record.
    "reason": NotRequired[Literal["unknown_token", "used", "expired", "other_node"]],  # Why a join was refused.
    "detail": NotRequired[str],  # What to do about a refusal, in words.
})

# A process won the lease of a single-writer role (stream `leadership-<role>`). Every event it appends afterwards is fenced on this event's revision, so an earlier holder that wakes up cannot append any more.
LeaderElectedData = TypedDict("LeaderElectedData", {
    "role": str,  # The single-writer role taken over: a service (`placement`, `storage`), the execution recorder (`recorder`), or one event partition of the ledger (`ledger`, `led
    "holder": str,  # The process that holds the lease: instance, host and process id, for people and logs.
    "term": int,  # 1 for the role's first leader, one more for each election after: the revision of this event in `leadership-<role>` plus one.
    "leaseMs": int,  # How long the holder's NATS KV lease lasts without renewal: a standby takes over at most about this long after the holder dies.
    "electedAt": str,  # Holder clock: when it won the lease.
})

# Metadata every event carries; covered by the hash chain.
LeaderElectedMetadata = TypedDict("LeaderElectedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A process won the lease of a single-writer role (stream `leadership-<role>`). Every event it appends afterwards is fenced on this event's revision, so an earlier holder that wakes up cannot append any more. Subject: `gpunet.evt.LeaderElected.*.*`. Schema version 1.
LeaderElected = TypedDict("LeaderElected", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["LeaderElected"],  # Always `LeaderElected`.
    "data": LeaderElectedData,  # A process won the lease of a single-writer role (stream `leadership-<role>`). Every event it appends afterwards is fenced on this event's revision, so an earlie
    "metadata": LeaderElectedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# API key ids, teams, roles, who issued them and whether revoked. Same as `GET /v1/keys`. Subject: `gpunet.qry.intake.ListApiKeys`. Schema version 1.
ListApiKeys = TypedDict("ListApiKeys", {
    "team": NotRequired[str],  # Only this team's keys. `admin`: its own team only (the default).
})

# The API key that made the change (its id and team), never the key itself.
ListApiKeysReplyKeysItemIssuedBy = TypedDict("ListApiKeysReplyKeysItemIssuedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# The API key that made the change (its id and team), never the key itself.
ListApiKeysReplyKeysItemRevokedBy = TypedDict("ListApiKeysReplyKeysItemRevokedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# Present when the key is revoked.
ListApiKeysReplyKeysItemRevoked = TypedDict("ListApiKeysReplyKeysItemRevoked", {
    "by": ListApiKeysReplyKeysItemRevokedBy,  # The API key that made the change (its id and team), never the key itself.
    "at": str,  # UTC instant, ISO-8601 with `Z`.
    "reason": NotRequired[str],  # Why, as recorded.
})

# An API key as intake knows it: never the key, never its digest.
ListApiKeysReplyKeysItem = TypedDict("ListApiKeysReplyKeysItem", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "role": Literal["producer", "compliance", "billing", "admin", "operator"],  # `producer`: submits and reads its team's jobs; `compliance`: reads, and audits every team; `billing`: charges, invoices, price lists; `admin`: everything within
    "name": NotRequired[str],  # The label given at issue.
    "source": Literal["events", "file"],  # `events`: issued with `CreateApiKey`; `file`: listed in the bootstrap key file.
    "issuedBy": NotRequired[ListApiKeysReplyKeysItemIssuedBy],  # The API key that made the change (its id and team), never the key itself.
    "issuedAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "expiresAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "revoked": NotRequired[ListApiKeysReplyKeysItemRevoked],  # Present when the key is revoked.
    "state": Literal["active", "revoked", "expired", "team_disabled"],  # Whether intake accepts it now.
})

# The keys.
ListApiKeysReply = TypedDict("ListApiKeysReply", {
    "keys": List[ListApiKeysReplyKeysItem],  # By team, then issue time.
})

# The caller's team's charges (usage lines and totals), or one job's; same as `GET /v1/charges`, team from the API key. Subject: `gpunet.qry.intake.ListCharges`. Schema version 1.
ListCharges = TypedDict("ListCharges", {
    "jobId": NotRequired[str],  # Only this job's charges (of the caller's team).
    "from": NotRequired[str],  # Only attempts finished at or after this time.
    "to": NotRequired[str],  # Only attempts finished before this time.
})

ListChargesReplyLinesItem = TypedDict("ListChargesReplyLinesItem", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": int,  # GPUs held by the attempt.
    "outcome": Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"],  # How the attempt ended: `completed` (exit 0), `failed` (non-zero exit or could not start), `timeout` (time limit hit, killed), `cancelled` (on request), `node_lo
    "heldFrom": str,  # ComputeHeld.heldAt of the attempt (agent clock).
    "finishedAt": str,  # JobFinished.finishedAt of the attempt (same agent's clock).
    "billableMs": int,  # finishedAt − heldFrom in ms, never negative.
    "rateMicrosPerGpuHour": int,  # Rate applied, micro-units per GPU per hour.
    "amountMicros": int,  # Charge: gpus × billableMs × rate / 3,600,000, rounded once by the rounding rule; 0 when waived.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "priceListVersion": int,  # Version of the price list the rate came from.
    "rounding": str,  # Name of the rounding rule applied, e.g. `per-line-half-up-micros` (exact value, then half up, once per line).
    "waivedReason": NotRequired[Literal["platform_fault"]],  # Present when the attempt is not charged: `platform_fault` (e.g. node lost). amountMicros is then 0.
    "recordedAt": str,  # When the ledger computed the line.
})

ListChargesReplyTotalsItem = TypedDict("ListChargesReplyTotalsItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Sum of the lines' amountMicros.
})

# Charges, as the ledger recorded them.
ListChargesReply = TypedDict("ListChargesReply", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "lines": List[ListChargesReplyLinesItem],  # One line per attempt and node, in order of `finishedAt`, then attempt id, then node id: the same order on every replay.
    "totals": List[ListChargesReplyTotalsItem],  # Sum per currency.
    "billableMs": int,  # Sum of the lines' billableMs.
})

# Who asks, set by intake from the caller's key: the invoices of `principal.team`, or of every team with `allTeams` (the operator). The subject accepts only intake.
ListInvoicesPrincipal = TypedDict("ListInvoicesPrincipal", {
    "keyId": str,  # Id of the API key that asked (never the key itself).
    "team": str,  # The key's team.
    "role": str,  # The key's role, e.g. `producer`, `billing`, `compliance`.
    "allTeams": bool,  # True when the answer may cover every team (a compliance key's audit, or the operator); false confines it to `team`.
})

# Invoices of a team (or of every team), drafts and finalized. Subject: `gpunet.qry.ledger.ListInvoices`. Schema version 1.
ListInvoices = TypedDict("ListInvoices", {
    "principal": ListInvoicesPrincipal,  # Who asks, set by intake from the caller's key: the invoices of `principal.team`, or of every team with `allTeams` (the operator). The subject accepts only intak
    "month": NotRequired[str],  # Only this month.
    "status": NotRequired[Literal["draft", "finalized"]],  # Only drafts or only finalized invoices.
})

ListInvoicesReplyInvoicesItemTotalsItem = TypedDict("ListInvoicesReplyInvoicesItemTotalsItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "billableMs": int,  # Duration in whole milliseconds.
})

ListInvoicesReplyInvoicesItemCreditedItem = TypedDict("ListInvoicesReplyInvoicesItemCreditedItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "amountMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
})

# One invoice in a list.
ListInvoicesReplyInvoicesItem = TypedDict("ListInvoicesReplyInvoicesItem", {
    "invoiceId": str,  # Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "month": str,  # Calendar month in UTC, `YYYY-MM`.
    "status": Literal["draft", "finalized"],  # `draft`: the month is open or inside its late-event cutoff, it may still change; `finalized`: frozen, corrected only by credit notes.
    "lines": int,  # Number of lines.
    "totals": List[ListInvoicesReplyInvoicesItemTotalsItem],  # Per currency.
    "credited": List[ListInvoicesReplyInvoicesItemCreditedItem],  # Credit notes per currency (finalized invoices only).
    "derivedAtPosition": str,  # Non-negative 64-bit integer as decimal text (JSON numbers lose precision above 2^53).
    "finalizesAt": str,  # Month end plus the late-event cutoff.
    "finalizedAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
})

# The invoices.
ListInvoicesReply = TypedDict("ListInvoicesReply", {
    "invoices": List[ListInvoicesReplyInvoicesItem],  # Newest month first, then by team.
    "asOfPosition": str,  # Store position the answer was derived at.
})

# The caller's jobs, newest first, filtered by state, a page at a time. Subject: `gpunet.qry.intake.ListJobs`. Schema version 1.
ListJobs = TypedDict("ListJobs", {
    "states": NotRequired[List[Literal["submitted", "staged", "placed", "running", "finishing", "completed", "failed", "timeout", "cancelled", "node_lost", "deadline", "rejected"]]],  # Only jobs in one of these states, e.g. `["running", "placed"]`. Default: all.
    "limit": NotRequired[int],  # Most jobs per page, 1–500. Default 50.
    "cursor": NotRequired[str],  # Where to continue: `nextCursor` of the previous page.
    "gpuModel": NotRequired[str],  # Only jobs that requested this GPU model, or ran an attempt on it, e.g. `A100-80GB`.
    "nodeId": NotRequired[str],  # Only jobs with an attempt placed on this node, e.g. `node-1`.
    "outcome": NotRequired[Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"]],  # Only jobs whose last attempt ended so, e.g. `failed`.
    "submittedFrom": NotRequired[str],  # Only jobs submitted at or after this instant.
    "submittedTo": NotRequired[str],  # Only jobs submitted before this instant.
    "team": NotRequired[str],  # Only this team's jobs. A key may name only its own team, unless it reads every team's audit (role `compliance`).
    "allTeams": NotRequired[bool],  # Every team's jobs, with `countsByTeam` (role `compliance` only). Default: the caller's team.
})

# One line of a job list.
ListJobsReplyJobsItem = TypedDict("ListJobsReplyJobsItem", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # The job's team (a compliance list holds every team's).
    "name": NotRequired[str],  # The spec's label, if any.
    "state": Literal["submitted", "staged", "placed", "running", "finishing", "completed", "failed", "timeout", "cancelled", "node_lost", "deadline", "rejected"],  # `submitted`: waiting for inputs to stage; `staged`: waiting for a node; `placed`: GPUs chosen or held; `running`: the process runs; `finishing`: ended, outputs 
    "outcome": NotRequired[Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"]],  # How the attempt ended: `completed` (exit 0), `failed` (non-zero exit or could not start), `timeout` (time limit hit, killed), `cancelled` (on request), `node_lo
    "gpus": int,  # GPUs requested.
    "gpuModel": NotRequired[str],  # GPU model requested, if any.
    "nodeId": NotRequired[str],  # Node of the last attempt, once placed.
    "submittedAt": str,  # When intake accepted the job.
    "updatedAt": str,  # Time of the latest event of the job.
})

ListJobsReplyCountsByStateItem = TypedDict("ListJobsReplyCountsByStateItem", {
    "state": Literal["submitted", "staged", "placed", "running", "finishing", "completed", "failed", "timeout", "cancelled", "node_lost", "deadline", "rejected"],  # `submitted`: waiting for inputs to stage; `staged`: waiting for a node; `placed`: GPUs chosen or held; `running`: the process runs; `finishing`: ended, outputs 
    "count": int,  # Jobs in that state.
})

ListJobsReplyCountsByTeamItem = TypedDict("ListJobsReplyCountsByTeamItem", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "count": int,  # Jobs of that team.
})

# One page of jobs.
ListJobsReply = TypedDict("ListJobsReply", {
    "jobs": List[ListJobsReplyJobsItem],  # Jobs, newest first.
    "nextCursor": Union[str, None],  # Pass as `cursor` for the next page; null on the last page.
    "countsByState": NotRequired[List[ListJobsReplyCountsByStateItem]],  # How many of the jobs that match every filter but `states` are in each state (states with none left out), over every page: the group-by of a jobs table.
    "countsByTeam": NotRequired[List[ListJobsReplyCountsByTeamItem]],  # With `allTeams`: how many of the jobs that match every filter but `team` and `states` are of each team (teams with none left out), over every page: the group-by
})

ListNodeStates = Dict[str, Any]

# The operator's cordon or drain in force, with who, why and when.
ListNodeStatesReplyNodesItemAdmin = TypedDict("ListNodeStatesReplyNodesItemAdmin", {
    "state": Literal["cordoned", "draining", "drained"],  # Cordoned, or draining until NodeDrained, then drained.
    "by": str,  # The operator who did it.
    "reason": str,  # Why, in the operator's words.
    "at": str,  # When it was recorded (placement clock).
    "drainedAt": NotRequired[str],  # When the drain completed (NodeDrained).
})

ListNodeStatesReplyNodesItem = TypedDict("ListNodeStatesReplyNodesItem", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "state": Literal["ready", "cordoned", "draining", "drained", "lost", "offline"],  # ready, cordoned, draining, drained, lost or offline (see NODE_STATES).
    "hostname": NotRequired[str],  # Host name the agent registered with.
    "gpus": int,  # GPUs (or declared slots) the node offers.
    "gpusHeld": int,  # GPUs held by attempts now.
    "gpuModels": List[str],  # The models of its GPUs.
    "runningAttempts": int,  # Attempts holding GPUs on the node (placed, not yet released).
    "lastHeartbeatAt": NotRequired[str],  # Placement clock: when its last heartbeat arrived (this placement process).
    "heartbeatAgeMs": NotRequired[int],  # How long ago, at `at` of the reply.
    "leaseMs": NotRequired[int],  # Silence longer than this and the node is declared lost.
    "registeredAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "lostAt": NotRequired[str],  # When placement declared it lost (while it has not registered again).
    "admin": NotRequired[ListNodeStatesReplyNodesItemAdmin],  # The operator's cordon or drain in force, with who, why and when.
})

# Reply to ListNodeStates.
ListNodeStatesReply = TypedDict("ListNodeStatesReply", {
    "nodes": List[ListNodeStatesReplyNodesItem],  # Registration order.
    "at": str,  # UTC instant, ISO-8601 with `Z`.
})

ListNodes = Dict[str, Any]

ListNodesReplyNodesItem = TypedDict("ListNodesReplyNodesItem", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "publicKey": str,  # NKey user public key of the node (`U…`); its reports are signed with the matching seed.
    "enrolledBy": str,  # Who enrolled the node: `gpunet up`, or the operator who ran `gpunet nodes enroll`.
    "enrolledAt": str,  # Recorder clock: when the enrollment was recorded.
})

# Reply to ListNodes.
ListNodesReply = TypedDict("ListNodesReply", {
    "nodes": List[ListNodesReplyNodesItem],  # Each enrolled node with its current key, by node id.
})

ListPriceLists = Dict[str, Any]

ListPriceListsReplyVersionsItem = TypedDict("ListPriceListsReplyVersionsItem", {
    "version": int,  # Price list version, an integer ≥ 1, increasing.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "effectiveFrom": str,  # From when this version applies (inclusive); the latest version in force wins.
    "ratesMicrosPerGpuHour": Dict[str, int],  # Price per GPU per hour in micro-units, by GPU model, e.g. `{ "A100-80GB": 2500000 }` for 2.50 per GPU-hour.
    "defaultRateMicrosPerGpuHour": NotRequired[int],  # Price for models the list does not name; absent: such models cannot be priced.
    "minimumChargeMicros": NotRequired[int],  # Least amount of a charged attempt line (billableMs > 0, not waived): a line whose rounded amount is below it is charged this instead. Absent: no minimum.
    "publishedAt": str,  # When the ledger recorded the list.
    "publishedBy": NotRequired[str],  # Who asked for it: `<team>/<keyId>` of a `billing` API key; absent for the first list, from the ledger's configuration.
})

# The price lists.
ListPriceListsReply = TypedDict("ListPriceListsReply", {
    "versions": List[ListPriceListsReplyVersionsItem],  # Every version, ascending.
    "current": NotRequired[int],  # The version in force now, if any.
    "at": str,  # When this answer was made.
})

ListTeams = Dict[str, Any]

# The API key that made the change (its id and team), never the key itself.
ListTeamsReplyTeamsItemCreatedBy = TypedDict("ListTeamsReplyTeamsItemCreatedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# The API key that made the change (its id and team), never the key itself.
ListTeamsReplyTeamsItemDisabledBy = TypedDict("ListTeamsReplyTeamsItemDisabledBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# Present when the team is disabled.
ListTeamsReplyTeamsItemDisabled = TypedDict("ListTeamsReplyTeamsItemDisabled", {
    "by": ListTeamsReplyTeamsItemDisabledBy,  # The API key that made the change (its id and team), never the key itself.
    "at": str,  # UTC instant, ISO-8601 with `Z`.
    "reason": NotRequired[str],  # Why, as recorded.
})

# A team.
ListTeamsReplyTeamsItem = TypedDict("ListTeamsReplyTeamsItem", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "displayName": str,  # Name for people (the id when none was given).
    "timeZone": NotRequired[str],  # IANA time zone of the team, if set.
    "contact": NotRequired[str],  # Who to reach about the team, if set.
    "source": Literal["events", "file"],  # `events`: created with `CreateTeam`; `file`: named by a key of the bootstrap key file.
    "createdBy": NotRequired[ListTeamsReplyTeamsItemCreatedBy],  # The API key that made the change (its id and team), never the key itself.
    "createdAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "disabled": NotRequired[ListTeamsReplyTeamsItemDisabled],  # Present when the team is disabled.
    "activeKeys": int,  # Keys of the team that are neither revoked nor expired.
})

# The teams.
ListTeamsReply = TypedDict("ListTeamsReply", {
    "teams": List[ListTeamsReplyTeamsItem],  # Sorted by id.
})

# One line of a job's output, on `gpunet.logs.<team>.<jobId>.<nodeId>` (stream GPUNET_LOGS).
LogLine = TypedDict("LogLine", {
    "ts": str,  # Agent clock: when the line was read.
    "stream": Literal["stdout", "stderr", "agent"],  # `stdout`/`stderr` of the job, or `agent` for the agent's own notices (time limit, kill).
    "line": str,  # The line, without its newline; long lines are cut.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
})

NodeCordonedDataRunningAttemptsItem = TypedDict("NodeCordonedDataRunningAttemptsItem", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
})

# The operator cordoned a node: nothing new is placed on it; what runs there keeps running.
NodeCordonedData = TypedDict("NodeCordonedData", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "by": str,  # The operator who did it: `operator <user>` (`gpunet nodes …` with the operator identity on NATS) or `operator key <team>/<keyId>` (through intake's HTTP API wit
    "reason": str,  # Why, in the operator's words (shown by `gpunet nodes list`).
    "at": str,  # Placement clock: when it was recorded; from then on nothing new is placed on the node.
    "runningAttempts": List[NodeCordonedDataRunningAttemptsItem],  # Attempts holding GPUs on the node when it was recorded: they keep running.
})

# Metadata every event carries; covered by the hash chain.
NodeCordonedMetadata = TypedDict("NodeCordonedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The operator cordoned a node: nothing new is placed on it; what runs there keeps running. Subject: `gpunet.evt.NodeCordoned.*.*`. Schema version 1.
NodeCordoned = TypedDict("NodeCordoned", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["NodeCordoned"],  # Always `NodeCordoned`.
    "data": NodeCordonedData,  # The operator cordoned a node: nothing new is placed on it; what runs there keeps running.
    "metadata": NodeCordonedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

NodeDrainRequestedDataRunningAttemptsItem = TypedDict("NodeDrainRequestedDataRunningAttemptsItem", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
})

# The operator asked to drain a node: nothing new is placed on it, what runs there finishes, then placement records NodeDrained.
NodeDrainRequestedData = TypedDict("NodeDrainRequestedData", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "by": str,  # The operator who did it: `operator <user>` (`gpunet nodes …` with the operator identity on NATS) or `operator key <team>/<keyId>` (through intake's HTTP API wit
    "reason": str,  # Why, in the operator's words (shown by `gpunet nodes list`).
    "at": str,  # Placement clock: when it was recorded; from then on nothing new is placed on the node.
    "runningAttempts": List[NodeDrainRequestedDataRunningAttemptsItem],  # Attempts holding GPUs on the node when the drain was asked: the node is drained once every one has released its GPUs.
})

# Metadata every event carries; covered by the hash chain.
NodeDrainRequestedMetadata = TypedDict("NodeDrainRequestedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The operator asked to drain a node: nothing new is placed on it, what runs there finishes, then placement records NodeDrained. Subject: `gpunet.evt.NodeDrainRequested.*.*`. Schema version 1.
NodeDrainRequested = TypedDict("NodeDrainRequested", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["NodeDrainRequested"],  # Always `NodeDrainRequested`.
    "data": NodeDrainRequestedData,  # The operator asked to drain a node: nothing new is placed on it, what runs there finishes, then placement records NodeDrained.
    "metadata": NodeDrainRequestedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# A draining node holds no attempt any more: it may be taken down without losing work.
NodeDrainedData = TypedDict("NodeDrainedData", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "requestedAt": str,  # The `at` of the NodeDrainRequested this completes.
    "at": str,  # Placement clock: when placement saw the node hold nothing any more (its last attempt released its GPUs, or the node was lost).
    "afterLoss": bool,  # True when the node was lost while draining: its attempts ended `node_lost` (requeued, not billed) rather than on their own.
})

# Metadata every event carries; covered by the hash chain.
NodeDrainedMetadata = TypedDict("NodeDrainedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A draining node holds no attempt any more: it may be taken down without losing work. Subject: `gpunet.evt.NodeDrained.*.*`. Schema version 1.
NodeDrained = TypedDict("NodeDrained", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["NodeDrained"],  # Always `NodeDrained`.
    "data": NodeDrainedData,  # A draining node holds no attempt any more: it may be taken down without losing work.
    "metadata": NodeDrainedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# The recorder takes reports from this node signed with this key (a later enrollment of the node replaces the key).
NodeEnrolledData = TypedDict("NodeEnrolledData", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "publicKey": str,  # NKey user public key of the node (`U…`); its reports are signed with the matching seed.
    "enrolledBy": str,  # Who enrolled the node: `gpunet up`, or the operator who ran `gpunet nodes enroll`.
    "enrolledAt": str,  # Recorder clock: when the enrollment was recorded.
})

# Metadata every event carries; covered by the hash chain.
NodeEnrolledMetadata = TypedDict("NodeEnrolledMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The recorder takes reports from this node signed with this key (a later enrollment of the node replaces the key). Subject: `gpunet.evt.NodeEnrolled.*.*`. Schema version 1.
NodeEnrolled = TypedDict("NodeEnrolled", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["NodeEnrolled"],  # Always `NodeEnrolled`.
    "data": NodeEnrolledData,  # The recorder takes reports from this node signed with this key (a later enrollment of the node replaces the key).
    "metadata": NodeEnrolledMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

NodeHeartbeatDataRunningAttemptsItem = TypedDict("NodeHeartbeatDataRunningAttemptsItem", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
})

NodeHeartbeatDataCachedDataItem = TypedDict("NodeHeartbeatDataCachedDataItem", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
})

# An agent is alive; carries its free GPUs, running attempts and cached blobs. Consumers may keep only the latest.
NodeHeartbeatData = TypedDict("NodeHeartbeatData", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "freeGpuIndices": List[int],  # GPUs not held by any attempt.
    "runningAttempts": List[NodeHeartbeatDataRunningAttemptsItem],  # Attempts the agent holds GPUs for.
    "cachedBlobs": NotRequired[List[str]],  # Blobs in the node's local cache, so placement can prefer nodes that hold a job's data.
    "cachedData": NotRequired[List[NodeHeartbeatDataCachedDataItem]],  # Blobs in the node's input cache by team (the cache is per team): placement prefers a node holding a job's inputs for that job's team only.
    "sequence": int,  # Increases by one per heartbeat of this agent run, so gaps are visible.
    "sentAt": str,  # Agent clock: when the heartbeat was sent.
})

# Metadata every event carries; covered by the hash chain.
NodeHeartbeatMetadata = TypedDict("NodeHeartbeatMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# An agent is alive; carries its free GPUs, running attempts and cached blobs. Consumers may keep only the latest. Subject: `gpunet.evt.NodeHeartbeat.*.*`. Schema version 1.
NodeHeartbeat = TypedDict("NodeHeartbeat", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["NodeHeartbeat"],  # Always `NodeHeartbeat`.
    "data": NodeHeartbeatData,  # An agent is alive; carries its free GPUs, running attempts and cached blobs. Consumers may keep only the latest.
    "metadata": NodeHeartbeatMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

NodeHeartbeatMessageRunningAttemptsItem = TypedDict("NodeHeartbeatMessageRunningAttemptsItem", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
})

NodeHeartbeatMessageCachedDataItem = TypedDict("NodeHeartbeatMessageCachedDataItem", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
})

# An agent's heartbeat on `gpunet.hb.<nodeId>` (core NATS, not stored): the data of a NodeHeartbeat.
NodeHeartbeatMessage = TypedDict("NodeHeartbeatMessage", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "freeGpuIndices": List[int],  # GPUs not held by any attempt.
    "runningAttempts": List[NodeHeartbeatMessageRunningAttemptsItem],  # Attempts the agent holds GPUs for.
    "cachedBlobs": NotRequired[List[str]],  # Blobs in the node's local cache, so placement can prefer nodes that hold a job's data.
    "cachedData": NotRequired[List[NodeHeartbeatMessageCachedDataItem]],  # Blobs in the node's input cache by team (the cache is per team): placement prefers a node holding a job's inputs for that job's team only.
    "sequence": int,  # Increases by one per heartbeat of this agent run, so gaps are visible.
    "sentAt": str,  # Agent clock: when the heartbeat was sent.
})

# An operator issued a one-time token a machine may join as this node with, until it expires (only its secret's hash is kept).
NodeJoinTokenIssuedData = TypedDict("NodeJoinTokenIssuedData", {
    "nodeId": str,  # The only node this token may join as.
    "tokenId": str,  # First 16 hex digits of the sha256 of the token's secret: names the token in the record.
    "secretSha256": str,  # sha256 (hex) of the token's one-time secret; the secret itself is never recorded.
    "expiresAt": str,  # After this the token joins nothing.
    "issuedBy": str,  # The operator who ran `gpunet nodes token`.
    "issuedAt": str,  # Recorder clock.
})

# Metadata every event carries; covered by the hash chain.
NodeJoinTokenIssuedMetadata = TypedDict("NodeJoinTokenIssuedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# An operator issued a one-time token a machine may join as this node with, until it expires (only its secret's hash is kept). Subject: `gpunet.evt.NodeJoinTokenIssued.*.*`. Schema version 1.
NodeJoinTokenIssued = TypedDict("NodeJoinTokenIssued", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["NodeJoinTokenIssued"],  # Always `NodeJoinTokenIssued`.
    "data": NodeJoinTokenIssuedData,  # An operator issued a one-time token a machine may join as this node with, until it expires (only its secret's hash is kept).
    "metadata": NodeJoinTokenIssuedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# A machine joined with this token: the token is spent, and the node is enrolled with the key it made (NodeEnrolled, same append).
NodeJoinTokenUsedData = TypedDict("NodeJoinTokenUsedData", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "tokenId": str,  # First 16 hex digits of the sha256 of the token's secret: names the token in the record.
    "publicKey": str,  # The key the node made on its own machine and joined with (enrolled in the same append).
    "usedAt": str,  # Recorder clock.
})

# Metadata every event carries; covered by the hash chain.
NodeJoinTokenUsedMetadata = TypedDict("NodeJoinTokenUsedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A machine joined with this token: the token is spent, and the node is enrolled with the key it made (NodeEnrolled, same append). Subject: `gpunet.evt.NodeJoinTokenUsed.*.*`. Schema version 1.
NodeJoinTokenUsed = TypedDict("NodeJoinTokenUsed", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["NodeJoinTokenUsed"],  # Always `NodeJoinTokenUsed`.
    "data": NodeJoinTokenUsedData,  # A machine joined with this token: the token is spent, and the node is enrolled with the key it made (NodeEnrolled, same append).
    "metadata": NodeJoinTokenUsedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

NodeLostDataAffectedAttemptsItem = TypedDict("NodeLostDataAffectedAttemptsItem", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
})

# A node stopped answering; its running attempts are lost (a platform fault, not billed by default).
NodeLostData = TypedDict("NodeLostData", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "reason": Literal["heartbeat_timeout", "agent_restarted", "deregistered"],  # `heartbeat_timeout`: no heartbeat in time; `agent_restarted`: the agent came back without its runs; `deregistered`: taken out of service.
    "lastSeenAt": str,  # Time of the last heartbeat (agent clock).
    "detectedAt": str,  # When placement declared the node lost (placement clock).
    "affectedAttempts": List[NodeLostDataAffectedAttemptsItem],  # Attempts that were running there; each ends `node_lost` and is not billed by default.
})

# Metadata every event carries; covered by the hash chain.
NodeLostMetadata = TypedDict("NodeLostMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A node stopped answering; its running attempts are lost (a platform fault, not billed by default). Subject: `gpunet.evt.NodeLost.*.*`. Schema version 1.
NodeLost = TypedDict("NodeLost", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["NodeLost"],  # Always `NodeLost`.
    "data": NodeLostData,  # A node stopped answering; its running attempts are lost (a platform fault, not billed by default).
    "metadata": NodeLostMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# One output file: where the job wrote it and its content address.
NodeOutputsReportOutputsFilesItem = TypedDict("NodeOutputsReportOutputsFilesItem", {
    "path": str,  # Path relative to `GPUNET_OUTPUT_DIR`, with `/` separators.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

# An output file that matched the globs but was refused.
NodeOutputsReportOutputsRejectedItem = TypedDict("NodeOutputsReportOutputsRejectedItem", {
    "path": str,  # Path relative to `GPUNET_OUTPUT_DIR`, with `/` separators; control characters escaped as in JSON (`\n`) for `invalid_name`.
    "reason": Literal["symlink_outside", "symlink_dangling", "not_regular_file", "size_cap", "changed", "unreadable", "invalid_name"],  # `symlink_outside`: a symlink pointing outside the output directory (never followed); `symlink_dangling`: points at nothing; `not_regular_file`: a directory link
    "message": str,  # What was refused and why, for people.
})

NodeOutputsReportOutputsLogsItem = TypedDict("NodeOutputsReportOutputsLogsItem", {
    "stream": Literal["stdout", "stderr"],  # Which stream.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

# Internal: an execution agent asks storage to record the outputs of one attempt after uploading them.
NodeOutputsReportOutputs = TypedDict("NodeOutputsReportOutputs", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "files": List[NodeOutputsReportOutputsFilesItem],  # Output files already uploaded to the object store under the team, by content address.
    "truncated": NotRequired[bool],  # True when files were left out because `outputs.maxBytes` was reached.
    "rejected": NotRequired[List[NodeOutputsReportOutputsRejectedItem]],  # Files matching the globs that were refused, each with why (recorded in OutputsStored).
    "logs": NotRequired[List[NodeOutputsReportOutputsLogsItem]],  # The captured stdout and stderr, uploaded like outputs.
})

# A node's signed outputs of one attempt, on `gpunet.report.<nodeId>.outputs`.
NodeOutputsReport = TypedDict("NodeOutputsReport", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "outputs": NodeOutputsReportOutputs,  # Internal: an execution agent asks storage to record the outputs of one attempt after uploading them.
    "signature": str,  # base64url ed25519 signature by the node key of `outputsSigningBytes`.
})

# The recorded outputs.
NodeOutputsReportReply = TypedDict("NodeOutputsReportReply", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "files": int,  # Number of files recorded.
    "totalBytes": int,  # Sum of their sizes.
    "duplicate": bool,  # True when this attempt's outputs were already recorded (a retried request).
})

# One GPU (or declared slot) of a node.
NodeRegisteredDataGpusItem = TypedDict("NodeRegisteredDataGpusItem", {
    "index": int,  # GPU index on its node (as in `CUDA_VISIBLE_DEVICES`).
    "uuid": NotRequired[str],  # The GPU's UUID as `nvidia-smi` reports it (`GPU-…`): stable where the index is not; absent for declared slots.
    "model": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "memoryMiB": NotRequired[int],  # GPU memory in MiB, when known.
})

# An agent offers its GPUs (or declared slots) to the network.
NodeRegisteredData = TypedDict("NodeRegisteredData", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "hostname": NotRequired[str],  # Host name of the machine, for people.
    "gpus": List[NodeRegisteredDataGpusItem],  # Every GPU the agent offers.
    "simulated": bool,  # True when the GPUs are slots declared with `--gpus` rather than found by `nvidia-smi`.
    "networkIsolation": bool,  # Whether the agent can give a job its own network namespace (jobs with `network: false` are isolated there).
    "agentVersion": NotRequired[str],  # Version of the agent software.
    "containerRuntimes": NotRequired[List[Literal["docker", "podman"]]],  # Container runtimes that answer on the node (`docker`, `podman`); absent or empty: it runs scripts only.
    "heartbeatIntervalMs": int,  # How often the agent promises a NodeHeartbeat.
    "registeredAt": str,  # Agent clock: when the agent started serving.
})

# Metadata every event carries; covered by the hash chain.
NodeRegisteredMetadata = TypedDict("NodeRegisteredMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# An agent offers its GPUs (or declared slots) to the network. Subject: `gpunet.evt.NodeRegistered.*.*`. Schema version 1.
NodeRegistered = TypedDict("NodeRegistered", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["NodeRegistered"],  # Always `NodeRegistered`.
    "data": NodeRegisteredData,  # An agent offers its GPUs (or declared slots) to the network.
    "metadata": NodeRegisteredMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

NodeReportEventMetadata = TypedDict("NodeReportEventMetadata", {
    "correlationId": str,
    "causationId": str,
    "jobId": NotRequired[str],
    "team": NotRequired[str],
    "producer": str,
    "occurredAt": str,
})

NodeReportEvent = TypedDict("NodeReportEvent", {
    "streamId": str,
    "eventId": str,
    "type": str,
    "data": Any,
    "metadata": NodeReportEventMetadata,
})

# A node's signed observation, on `gpunet.report.<nodeId>.event`.
NodeReport = TypedDict("NodeReport", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "journal": str,  # Id of the node's journal (made once with it): `seq` counts within it.
    "seq": str,  # Position of the event in the node's journal: increases with every report, so an old one sent again is told apart.
    "event": NodeReportEvent,
    "signature": str,  # base64url ed25519 signature by the node key of `reportSigningBytes` of the other fields.
})

# Reply to NodeReport.
NodeReportReply = TypedDict("NodeReportReply", {
    "status": Literal["accepted", "duplicate", "refused"],  # `accepted`: recorded now; `duplicate`: recorded earlier; `refused`: never recorded (the refusal is).
    "reason": NotRequired[Literal["malformed", "unknown_node", "bad_signature", "other_node", "not_placed", "other_team", "replayed", "state", "bad_blob"]],
    "detail": NotRequired[str],
})

# The recorder refused a report of a node: nothing of it was recorded or billed.
NodeReportRefusedData = TypedDict("NodeReportRefusedData", {
    "nodeId": str,  # The node the report came from (its subject), as sent.
    "reason": Literal["malformed", "unknown_node", "bad_signature", "other_node", "not_placed", "other_team", "replayed", "state", "bad_blob"],  # `malformed`: not a report; `unknown_node`: no enrolled key; `bad_signature`: not signed by the enrolled key; `other_node`: about another node (its stream, its a
    "detail": str,  # What did not hold, for the operator.
    "eventId": NotRequired[str],  # The reported event id, when there was one.
    "type": NotRequired[str],  # The reported event type, or `StoreOutputs` for an outputs report.
    "streamId": NotRequired[str],  # The stream the report was for.
    "jobId": NotRequired[str],  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": NotRequired[str],  # The attempt the report was about, as sent.
    "publicKey": NotRequired[str],  # The key the report claims to be signed with (the enrolled one, when the node is known).
    "refusedAt": str,  # Recorder clock.
})

# Metadata every event carries; covered by the hash chain.
NodeReportRefusedMetadata = TypedDict("NodeReportRefusedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The recorder refused a report of a node: nothing of it was recorded or billed. Subject: `gpunet.evt.NodeReportRefused.*.*`. Schema version 1.
NodeReportRefused = TypedDict("NodeReportRefused", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["NodeReportRefused"],  # Always `NodeReportRefused`.
    "data": NodeReportRefusedData,  # The recorder refused a report of a node: nothing of it was recorded or billed.
    "metadata": NodeReportRefusedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# The operator took back a cordon or drain: the node takes new work again.
NodeUncordonedData = TypedDict("NodeUncordonedData", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "by": str,  # The operator who did it: `operator <user>` (`gpunet nodes …` with the operator identity on NATS) or `operator key <team>/<keyId>` (through intake's HTTP API wit
    "reason": NotRequired[str],  # Why, in the operator's words (shown by `gpunet nodes list`).
    "at": str,  # Placement clock: from then on the node takes new work again (while it is alive).
    "previous": Literal["cordoned", "draining", "drained"],  # What the operator took back.
})

# Metadata every event carries; covered by the hash chain.
NodeUncordonedMetadata = TypedDict("NodeUncordonedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The operator took back a cordon or drain: the node takes new work again. Subject: `gpunet.evt.NodeUncordoned.*.*`. Schema version 1.
NodeUncordoned = TypedDict("NodeUncordoned", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["NodeUncordoned"],  # Always `NodeUncordoned`.
    "data": NodeUncordonedData,  # The operator took back a cordon or drain: the node takes new work again.
    "metadata": NodeUncordonedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# One output file: where the job wrote it and its content address.
OutputsStoredDataFilesItem = TypedDict("OutputsStoredDataFilesItem", {
    "path": str,  # Path relative to `GPUNET_OUTPUT_DIR`, with `/` separators.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

# An output file that matched the globs but was refused.
OutputsStoredDataRejectedItem = TypedDict("OutputsStoredDataRejectedItem", {
    "path": str,  # Path relative to `GPUNET_OUTPUT_DIR`, with `/` separators; control characters escaped as in JSON (`\n`) for `invalid_name`.
    "reason": Literal["symlink_outside", "symlink_dangling", "not_regular_file", "size_cap", "changed", "unreadable", "invalid_name"],  # `symlink_outside`: a symlink pointing outside the output directory (never followed); `symlink_dangling`: points at nothing; `not_regular_file`: a directory link
    "message": str,  # What was refused and why, for people.
})

OutputsStoredDataLogsItem = TypedDict("OutputsStoredDataLogsItem", {
    "stream": Literal["stdout", "stderr"],  # Which stream.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

# The files matching the job's output globs, and its logs, are stored by content address.
OutputsStoredData = TypedDict("OutputsStoredData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "files": List[OutputsStoredDataFilesItem],  # Every stored file that matched the output globs.
    "totalBytes": int,  # Sum of the stored file sizes.
    "truncated": NotRequired[bool],  # True when files were skipped because `outputs.maxBytes` was reached.
    "rejected": NotRequired[List[OutputsStoredDataRejectedItem]],  # Files matching the globs that were refused (symlinks leaving the output directory, the size cap, …), each with why; at most 1000 listed.
    "logs": NotRequired[List[OutputsStoredDataLogsItem]],  # The run's captured stdout and stderr, stored like outputs.
    "storedAt": str,  # When the last file was stored.
})

# Metadata every event carries; covered by the hash chain.
OutputsStoredMetadata = TypedDict("OutputsStoredMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The files matching the job's output globs, and its logs, are stored by content address. Subject: `gpunet.evt.OutputsStored.*.*`. Schema version 1.
OutputsStored = TypedDict("OutputsStored", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["OutputsStored"],  # Always `OutputsStored`.
    "data": OutputsStoredData,  # The files matching the job's output globs, and its logs, are stored by content address.
    "metadata": OutputsStoredMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# A new version of the price list: micro-units per GPU per hour, by GPU model.
PriceListPublishedData = TypedDict("PriceListPublishedData", {
    "version": int,  # Price list version, an integer ≥ 1, increasing.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "effectiveFrom": str,  # From when this version applies (inclusive); the latest version in force wins.
    "ratesMicrosPerGpuHour": Dict[str, int],  # Price per GPU per hour in micro-units, by GPU model, e.g. `{ "A100-80GB": 2500000 }` for 2.50 per GPU-hour.
    "defaultRateMicrosPerGpuHour": NotRequired[int],  # Price for models the list does not name; absent: such models cannot be priced.
    "minimumChargeMicros": NotRequired[int],  # Least amount of a charged attempt line (billableMs > 0, not waived): a line whose rounded amount is below it is charged this instead. Absent: no minimum.
    "publishedAt": str,  # When the ledger recorded the list.
    "publishedBy": NotRequired[str],  # Who asked for it: `<team>/<keyId>` of a `billing` API key; absent for the first list, from the ledger's configuration.
})

# Metadata every event carries; covered by the hash chain.
PriceListPublishedMetadata = TypedDict("PriceListPublishedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A new version of the price list: micro-units per GPU per hour, by GPU model. Subject: `gpunet.evt.PriceListPublished.*.*`. Schema version 1.
PriceListPublished = TypedDict("PriceListPublished", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["PriceListPublished"],  # Always `PriceListPublished`.
    "data": PriceListPublishedData,  # A new version of the price list: micro-units per GPU per hour, by GPU model.
    "metadata": PriceListPublishedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# Publish a new price list version (API key with role `billing`). Same as `POST /v1/prices`. Subject: `gpunet.cmd.PublishPriceList`. Schema version 1.
PublishPriceList = TypedDict("PublishPriceList", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "effectiveFrom": NotRequired[str],  # From when the list applies (inclusive), not before the time it is recorded: a price list never changes the past. Default: the time it is recorded.
    "ratesMicrosPerGpuHour": Dict[str, int],  # Price per GPU per hour in micro-units by GPU model, e.g. `{ "A100-80GB": 2500000 }` for 2.50 per GPU-hour.
    "defaultRateMicrosPerGpuHour": NotRequired[int],  # Price for models the list does not name; absent: such models cannot be priced.
    "minimumChargeMicros": NotRequired[int],  # Least amount of a charged attempt line; absent: no minimum.
})

# Reply to PublishPriceList.
PublishPriceListReply = TypedDict("PublishPriceListReply", {
    "version": int,  # Price list version, an integer ≥ 1, increasing.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "effectiveFrom": str,  # From when this version applies (inclusive); the latest version in force wins.
    "ratesMicrosPerGpuHour": Dict[str, int],  # Price per GPU per hour in micro-units, by GPU model, e.g. `{ "A100-80GB": 2500000 }` for 2.50 per GPU-hour.
    "defaultRateMicrosPerGpuHour": NotRequired[int],  # Price for models the list does not name; absent: such models cannot be priced.
    "minimumChargeMicros": NotRequired[int],  # Least amount of a charged attempt line (billableMs > 0, not waived): a line whose rounded amount is below it is charged this instead. Absent: no minimum.
    "publishedAt": str,  # When the ledger recorded the list.
    "publishedBy": NotRequired[str],  # Who asked for it: `<team>/<keyId>` of a `billing` API key; absent for the first list, from the ledger's configuration.
})

# The API key that set it (id, team, role), never the key.
QuotaSetDataBy = TypedDict("QuotaSetDataBy", {
    "keyId": str,  # Id of the key (never the key itself).
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "role": str,  # The key's role (`billing`).
})

# A team's GPU quota for one model was set (replacing the last): concurrent GPUs, GPU-hours per month, borrowing. Placement honours it from its next pass; running work is never stopped by it.
QuotaSetData = TypedDict("QuotaSetData", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": Union[int, None],  # GPUs of the model the team's attempts may hold at once; null: no limit.
    "gpuHours": Union[int, None],  # GPU-hours of the model the team's attempts may hold per calendar month (UTC); null: no limit.
    "borrow": bool,  # Past `gpus`, the team may use GPUs of the model that no other team with quota room waits for (never past `gpuHours`).
    "by": QuotaSetDataBy,  # The API key that set it (id, team, role), never the key.
    "setAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# Metadata every event carries; covered by the hash chain.
QuotaSetMetadata = TypedDict("QuotaSetMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A team's GPU quota for one model was set (replacing the last): concurrent GPUs, GPU-hours per month, borrowing. Placement honours it from its next pass; running work is never stopped by it. Subject: `gpunet.evt.QuotaSet.*.*`. Schema version 1.
QuotaSet = TypedDict("QuotaSet", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["QuotaSet"],  # Always `QuotaSet`.
    "data": QuotaSetData,  # A team's GPU quota for one model was set (replacing the last): concurrent GPUs, GPU-hours per month, borrowing. Placement honours it from its next pass; running
    "metadata": QuotaSetMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# Internal: quotas and their use from the live state (intake answers `GetQuotas` and `gpunet capacity` with it). Subject: `gpunet.qry.placement.Quotas`. Schema version 1.
Quotas = TypedDict("Quotas", {
    "team": NotRequired[str],  # Only this team; absent: every team.
})

# One team's quota for one GPU model, and its use.
QuotasReplyQuotasItem = TypedDict("QuotasReplyQuotasItem", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": Union[int, None],  # Concurrent GPU quota; null: no limit.
    "gpuHours": Union[int, None],  # GPU-hours per month; null: no limit.
    "borrow": bool,  # Whether the team may borrow idle GPUs past `gpus`.
    "inUse": int,  # GPUs of the model the team's attempts hold now (placed until released), borrowed ones included.
    "borrowed": int,  # Of those, GPUs held by attempts placed as borrowed (past the quota).
    "heldMs": int,  # GPU-ms of the model the team's attempts held this month (UTC) so far, running ones up to now.
    "waiting": int,  # The team's queued jobs of the model held back by this quota now.
    "setAt": NotRequired[str],  # When the quota was set; absent for a team with usage but no quota.
})

# GPU quotas and their use.
QuotasReply = TypedDict("QuotasReply", {
    "month": str,  # A calendar month (UTC), e.g. `2026-12`.
    "quotas": List[QuotasReplyQuotasItem],  # By team, then model: every quota set, and every team with GPUs in use on a model.
    "at": str,  # When this answer was made (placement clock).
})

# The price of GPUs of a model for a duration at a time, as the ledger would charge it. Subject: `gpunet.qry.ledger.Quote`. Schema version 1.
Quote = TypedDict("Quote", {
    "gpuModel": NotRequired[str],  # The GPU model it would run on; absent: the highest rate of the list in force (the worst case of a job that may land on any model).
    "gpus": int,  # Number of GPUs, a whole number ≥ 1.
    "durationMs": int,  # Billable time to price, in ms.
    "at": str,  # When it would run: the price list in force then applies.
})

# A price, as the ledger would charge it.
QuoteReply = TypedDict("QuoteReply", {
    "amountMicros": int,  # gpus × durationMs × rate / 1 h, rounded half up once, as a usage line would be.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "rateMicrosPerGpuHour": int,  # The rate applied.
    "priceListVersion": int,  # The price list version the rate comes from.
})

# A page of the caller's team feed (its own jobs' events) after a store position. Live: subscribe to `gpunet.feed.<team>.>` (a `FeedEntry` per new entry) and read again from your last position. Subject: `gpunet.qry.intake.ReadFeed`. Schema version 1.
ReadFeed = TypedDict("ReadFeed", {
    "after": NotRequired[str],  # Exclusive store position: the `position` of the last entry you hold, or `next` of the previous reply. Default `0`: from the start.
    "jobId": NotRequired[str],  # Only this job's entries. Default: every job of the team.
    "limit": NotRequired[int],  # Most entries per reply, 1–1000. Default 200.
})

# One event of one of the team's jobs, as the team may see it.
ReadFeedReplyEntriesItem = TypedDict("ReadFeedReplyEntriesItem", {
    "position": str,  # The event's position in the store: the SSE `id`, and what to pass as `after` (or `Last-Event-ID`) to resume after it.
    "eventId": str,  # The event's id (unique; the same event is never sent under another id).
    "type": Literal["JobSubmitted", "JobRejected", "JobCancelRequested", "InputsStaged", "StagingFailed", "JobPlaced", "ComputeHeld", "JobStarted", "JobCheckpointed", "JobFinished", "JobRequeued", "ComputeReleased", "JobWithdrawn", "JobQuoted", "OutputsStored", "UsageRecorded", "DataRemoved", "JobEnded", "BudgetReserved", "BudgetReleased", "BudgetThresholdCrossed"],  # The event type; `data` is that event's data (`contracts/generated/json-schema/<type>.json`).
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "data": Dict[str, Any],  # The event's data as recorded.
    "occurredAt": str,  # When it happened, as its producer says.
    "recordedAt": str,  # When the store recorded it.
    "producer": str,  # The service that recorded it.
    "correlationId": str,  # Ties together every event caused by one request (e.g. the submit).
})

# One page of the team feed.
ReadFeedReply = TypedDict("ReadFeedReply", {
    "entries": List[ReadFeedReplyEntriesItem],  # Entries after `after`, in store order.
    "next": str,  # Pass as `after` for the next page; it may be past the last entry (positions of other teams' events are skipped).
    "caughtUp": bool,  # True when the page reached what intake has seen of the store: wait for a notification before asking again.
})

# A node reads one chunk of a blob of an attempt placed on it through storage, on `gpunet.data.<nodeId>.read`.
ReadForNode = TypedDict("ReadForNode", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "sha256": str,  # The blob to read: an input of the job (a file, a folder manifest or one of its files) or a recorded checkpoint's manifest or file.
    "seq": int,  # Stream sequence in the team's bucket: the reply is the blob's first chunk at or after it (0 for its first chunk); the reply's `Nats-Sequence` tells where the ch
})

# Storage's own JSON answer to a ReadForNode of a blob with no bytes (a chunk comes from nats-server as raw bytes instead).
ReadForNodeReply = TypedDict("ReadForNodeReply", {
    "end": Literal[True],  # The blob has no chunk at or after `seq`.
})

# Who asks, set by intake from the caller's key (logged by the ledger). The subject accepts only intake.
RebuildLedgerPrincipal = TypedDict("RebuildLedgerPrincipal", {
    "keyId": str,  # Id of the API key that asked (never the key itself).
    "team": str,  # The key's team.
    "role": str,  # The key's role, e.g. `producer`, `billing`, `compliance`.
    "allTeams": bool,  # True when the answer may cover every team (a compliance key's audit, or the operator); false confines it to `team`.
})

# Internal (intake → ledger): recompute every ledger projection from zero and compare the invoices byte for byte. Subject: `gpunet.cmd.RebuildLedger`. Schema version 1.
RebuildLedger = TypedDict("RebuildLedger", {
    "principal": RebuildLedgerPrincipal,  # Who asks, set by intake from the caller's key (logged by the ledger). The subject accepts only intake.
})

RebuildLedgerReplyInvoicesItem = TypedDict("RebuildLedgerReplyInvoicesItem", {
    "invoiceId": str,  # Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.
    "status": Literal["draft", "finalized"],  # `draft`: the month is open or inside its late-event cutoff, it may still change; `finalized`: frozen, corrected only by credit notes.
    "before": str,  # sha256 of the canonical JSON of the invoice before the rebuild.
    "after": str,  # … and after it.
    "identical": bool,  # Both digests exist and are equal.
})

RebuildLedgerReplyFinalizedItem = TypedDict("RebuildLedgerReplyFinalizedItem", {
    "invoiceId": str,  # Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.
    "identical": bool,  # Re-derived at its recorded position, byte-identical to the stored one.
})

# What the rebuild found.
RebuildLedgerReply = TypedDict("RebuildLedgerReply", {
    "toPosition": str,  # Store position both sides were derived at.
    "events": int,  # Events folded by the rebuild.
    "elapsedMs": int,  # Duration in whole milliseconds.
    "invoices": List[RebuildLedgerReplyInvoicesItem],  # Every invoice (with its credit notes).
    "finalized": List[RebuildLedgerReplyFinalizedItem],  # Every finalized invoice, re-derived from zero at the position recorded on it.
    "identical": bool,  # All of the above identical.
})

# Who asks, set by intake from the caller's key (role `billing`); recorded as `publishedBy` `<team>/<keyId>`. The subject accepts only intake.
RecordPriceListPrincipal = TypedDict("RecordPriceListPrincipal", {
    "keyId": str,  # Id of the API key that asked (never the key itself).
    "team": str,  # The key's team.
    "role": str,  # The key's role, e.g. `producer`, `billing`, `compliance`.
    "allTeams": bool,  # True when the answer may cover every team (a compliance key's audit, or the operator); false confines it to `team`.
})

# Internal (intake → ledger): record a new price list version, numbered by the ledger. Subject: `gpunet.cmd.RecordPriceList`. Schema version 1.
RecordPriceList = TypedDict("RecordPriceList", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "effectiveFrom": NotRequired[str],  # From when the list applies (inclusive), not before the time it is recorded: a price list never changes the past. Default: the time it is recorded.
    "ratesMicrosPerGpuHour": Dict[str, int],  # Price per GPU per hour in micro-units by GPU model, e.g. `{ "A100-80GB": 2500000 }` for 2.50 per GPU-hour.
    "defaultRateMicrosPerGpuHour": NotRequired[int],  # Price for models the list does not name; absent: such models cannot be priced.
    "minimumChargeMicros": NotRequired[int],  # Least amount of a charged attempt line; absent: no minimum.
    "principal": RecordPriceListPrincipal,  # Who asks, set by intake from the caller's key (role `billing`); recorded as `publishedBy` `<team>/<keyId>`. The subject accepts only intake.
})

# Reply to RecordPriceList.
RecordPriceListReply = TypedDict("RecordPriceListReply", {
    "version": int,  # Price list version, an integer ≥ 1, increasing.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "effectiveFrom": str,  # From when this version applies (inclusive); the latest version in force wins.
    "ratesMicrosPerGpuHour": Dict[str, int],  # Price per GPU per hour in micro-units, by GPU model, e.g. `{ "A100-80GB": 2500000 }` for 2.50 per GPU-hour.
    "defaultRateMicrosPerGpuHour": NotRequired[int],  # Price for models the list does not name; absent: such models cannot be priced.
    "minimumChargeMicros": NotRequired[int],  # Least amount of a charged attempt line (billableMs > 0, not waived): a line whose rounded amount is below it is charged this instead. Absent: no minimum.
    "publishedAt": str,  # When the ledger recorded the list.
    "publishedBy": NotRequired[str],  # Who asked for it: `<team>/<keyId>` of a `billing` API key; absent for the first list, from the ledger's configuration.
})

# Metadata every event carries; covered by the hash chain.
RecordedEventMetadata = TypedDict("RecordedEventMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# Any event on `gpunet.evt.*`; check `data` with the file named by `type`.
RecordedEvent = TypedDict("RecordedEvent", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": str,  # Event type, e.g. `JobFinished`.
    "data": Any,  # The event's payload.
    "metadata": RecordedEventMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# Who asks, set by intake from the caller's key: another team's invoice is not found unless `allTeams`. The subject accepts only intake.
ReplayInvoicePrincipal = TypedDict("ReplayInvoicePrincipal", {
    "keyId": str,  # Id of the API key that asked (never the key itself).
    "team": str,  # The key's team.
    "role": str,  # The key's role, e.g. `producer`, `billing`, `compliance`.
    "allTeams": bool,  # True when the answer may cover every team (a compliance key's audit, or the operator); false confines it to `team`.
})

# A what-if price list: the invoice is re-derived with these rates instead of the published ones (one list for the whole month unless `effectiveFrom` says otherwise). Nothing is written.
ReplayInvoicePrices = TypedDict("ReplayInvoicePrices", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "effectiveFrom": NotRequired[str],  # From when this list applies in the what-if (inclusive). Default: since ever, so one list prices every line.
    "ratesMicrosPerGpuHour": Dict[str, int],  # Price per GPU per hour in micro-units by GPU model, e.g. `{ "A100-80GB": 2500000 }` for 2.50 per GPU-hour.
    "defaultRateMicrosPerGpuHour": NotRequired[int],  # Price for models the list does not name; absent: such models cannot be priced.
    "minimumChargeMicros": NotRequired[int],  # Least amount of a charged attempt line; absent: no minimum.
})

# Re-derive an invoice from the event store as of its recorded position and diff it line by line; with `prices`, a what-if that writes nothing. Subject: `gpunet.qry.ledger.ReplayInvoice`. Schema version 1.
ReplayInvoice = TypedDict("ReplayInvoice", {
    "invoiceId": str,  # Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.
    "principal": ReplayInvoicePrincipal,  # Who asks, set by intake from the caller's key: another team's invoice is not found unless `allTeams`. The subject accepts only intake.
    "prices": NotRequired[ReplayInvoicePrices],  # A what-if price list: the invoice is re-derived with these rates instead of the published ones (one list for the whole month unless `effectiveFrom` says otherwi
})

ReplayInvoiceReplyLinesItemChangesItem = TypedDict("ReplayInvoiceReplyLinesItemChangesItem", {
    "field": str,  # The invoice line field, e.g. `amountMicros`.
    "recorded": str,  # JSON text of the recorded value.
    "replayed": str,  # JSON text of the replayed value.
})

# One invoice line: recorded against replayed.
ReplayInvoiceReplyLinesItem = TypedDict("ReplayInvoiceReplyLinesItem", {
    "lineId": str,  # `<attemptId>@<nodeId>`.
    "status": Literal["same", "changed", "missing", "extra"],  # `same`: identical field by field; `changed`: some field differs (`changes`); `missing`: recorded but not re-derived; `extra`: re-derived but not recorded.
    "identical": bool,  # `status` is `same`.
    "jobId": str,  # The job billed.
    "attemptId": str,  # Its run attempt.
    "nodeId": str,  # The node the attempt held GPUs on.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": int,  # GPUs held.
    "billableMs": int,  # Of the replayed line (the recorded one when it is missing now).
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "recordedAmountMicros": NotRequired[int],  # Absent for an `extra` line.
    "replayedAmountMicros": NotRequired[int],  # Absent for a `missing` line.
    "recordedRateMicrosPerGpuHour": NotRequired[int],  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "replayedRateMicrosPerGpuHour": NotRequired[int],  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "changes": List[ReplayInvoiceReplyLinesItemChangesItem],  # Each field that differs (changed lines only).
    "eventIds": List[str],  # Events the line comes from (the replayed line's, or the recorded one's when it is missing now).
})

ReplayInvoiceReplyTotalsItem = TypedDict("ReplayInvoiceReplyTotalsItem", {
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "recordedMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "replayedMicros": int,  # Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.
    "identical": bool,  # Both totals are equal.
})

# An invoice replayed from the event store, line by line.
ReplayInvoiceReply = TypedDict("ReplayInvoiceReply", {
    "invoiceId": str,  # Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.
    "invoiceStatus": Literal["draft", "finalized"],  # `finalized`: compared with the copy its InvoiceFinalized event recorded; `draft`: with the ledger's current draft.
    "asOfPosition": str,  # Store position the recorded invoice was derived at, and the replay with it.
    "whatIf": bool,  # True when priced with the request's what-if list: nothing is written, and differences are expected.
    "identical": bool,  # The replayed invoice is byte-identical to the recorded one (canonical JSON).
    "lines": List[ReplayInvoiceReplyLinesItem],  # Every line, recorded and replayed, in the recorded order, then lines only the replay has.
    "totals": List[ReplayInvoiceReplyTotalsItem],  # Per currency, recorded and replayed (0 where one side has none).
    "otherChanges": List[str],  # Other top-level fields that differ (period, rounding, postings, …).
    "summary": str,  # One sentence for people: identical, or how many lines differ.
})

# Revoke an API key (role `operator`, or `admin` for its own team). Same as `POST /v1/keys/{keyId}/revoke`. Subject: `gpunet.cmd.RevokeApiKey`. Schema version 1.
RevokeApiKey = TypedDict("RevokeApiKey", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "reason": NotRequired[str],  # Why, for the record.
})

# The API key that made the change (its id and team), never the key itself.
RevokeApiKeyReplyIssuedBy = TypedDict("RevokeApiKeyReplyIssuedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# The API key that made the change (its id and team), never the key itself.
RevokeApiKeyReplyRevokedBy = TypedDict("RevokeApiKeyReplyRevokedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# Present when the key is revoked.
RevokeApiKeyReplyRevoked = TypedDict("RevokeApiKeyReplyRevoked", {
    "by": RevokeApiKeyReplyRevokedBy,  # The API key that made the change (its id and team), never the key itself.
    "at": str,  # UTC instant, ISO-8601 with `Z`.
    "reason": NotRequired[str],  # Why, as recorded.
})

# An API key as intake knows it: never the key, never its digest.
RevokeApiKeyReply = TypedDict("RevokeApiKeyReply", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "role": Literal["producer", "compliance", "billing", "admin", "operator"],  # `producer`: submits and reads its team's jobs; `compliance`: reads, and audits every team; `billing`: charges, invoices, price lists; `admin`: everything within
    "name": NotRequired[str],  # The label given at issue.
    "source": Literal["events", "file"],  # `events`: issued with `CreateApiKey`; `file`: listed in the bootstrap key file.
    "issuedBy": NotRequired[RevokeApiKeyReplyIssuedBy],  # The API key that made the change (its id and team), never the key itself.
    "issuedAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "expiresAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "revoked": NotRequired[RevokeApiKeyReplyRevoked],  # Present when the key is revoked.
    "state": Literal["active", "revoked", "expired", "team_disabled"],  # Whether intake accepts it now.
})

# Set a team's monthly budget (role `billing`). Same as `PUT /v1/budgets/{team}`. Subject: `gpunet.cmd.SetBudget`. Schema version 1.
SetBudget = TypedDict("SetBudget", {
    "team": NotRequired[str],  # The team. Default: the caller's team.
    "monthlyMicros": int,  # Per UTC month, in micro-units, e.g. `5000000000` for 5000.00.
    "currency": NotRequired[str],  # Default: the currency of the price list in force.
    "onExceed": NotRequired[Literal["refuse", "hold"]],  # What a submit that would take the team past its budget gets: `refuse` (an error naming the figures; the default) or `hold` (accepted, waits in the queue with re
    "thresholdsPercent": NotRequired[List[int]],  # Soft thresholds in percent of the monthly amount: crossing one (spent + reserved) records `BudgetThresholdCrossed` once per month.
})

# The API key that made the change (its id and team), never the key itself.
SetBudgetReplyBudgetSetBy = TypedDict("SetBudgetReplyBudgetSetBy", {
    "keyId": str,  # Id of the acting API key (never the key itself).
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# The budget in force; absent: none (jobs are not checked).
SetBudgetReplyBudget = TypedDict("SetBudgetReplyBudget", {
    "monthlyMicros": int,  # What the team may commit per UTC month (spent + reserved), in micro-units of `currency`.
    "currency": str,  # The price list's currency the amount is in.
    "onExceed": Literal["refuse", "hold"],  # What a submit that would take the team past its budget gets: `refuse` (an error naming the figures; the default) or `hold` (accepted, waits in the queue with re
    "thresholdsPercent": List[int],  # Soft thresholds, ascending, in percent.
    "setBy": SetBudgetReplyBudgetSetBy,  # The API key that made the change (its id and team), never the key itself.
    "setAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# A team's budget and where it stands this month.
SetBudgetReply = TypedDict("SetBudgetReply", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "month": str,  # The UTC month of the figures, `YYYY-MM`.
    "budget": NotRequired[SetBudgetReplyBudget],  # The budget in force; absent: none (jobs are not checked).
    "spentMicros": int,  # Billed this month for jobs that ended.
    "reservedMicros": int,  # Worst cases of jobs that have not ended.
    "remainingMicros": int,  # monthly − spent − reserved; negative when held jobs wait beyond the budget. Absent budget: 0.
    "heldJobs": List[str],  # Reserved jobs that have not run and do not fit the budget now, in order: they wait in the queue with reason `BudgetExceeded`.
    "thresholdsCrossed": List[int],  # Thresholds crossed this month.
    "revision": str,  # Revision of the budget stream the figures are at (`-1`: nothing recorded).
})

# Set a team's GPU quota for one model (role `billing`). Same as `POST /v1/quotas`. Subject: `gpunet.cmd.SetQuota`. Schema version 1.
SetQuota = TypedDict("SetQuota", {
    "team": str,  # The team the quota is for.
    "gpuModel": str,  # The GPU model it limits.
    "gpus": NotRequired[Union[int, None]],  # GPUs held at once; null or absent: no limit.
    "gpuHours": NotRequired[Union[int, None]],  # GPU-hours per calendar month (UTC); null or absent: no limit.
    "borrow": NotRequired[bool],  # Use idle GPUs past `gpus`. Default false.
})

# One team's quota for one GPU model, and its use.
SetQuotaReply = TypedDict("SetQuotaReply", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": Union[int, None],  # Concurrent GPU quota; null: no limit.
    "gpuHours": Union[int, None],  # GPU-hours per month; null: no limit.
    "borrow": bool,  # Whether the team may borrow idle GPUs past `gpus`.
    "inUse": int,  # GPUs of the model the team's attempts hold now (placed until released), borrowed ones included.
    "borrowed": int,  # Of those, GPUs held by attempts placed as borrowed (past the quota).
    "heldMs": int,  # GPU-ms of the model the team's attempts held this month (UTC) so far, running ones up to now.
    "waiting": int,  # The team's queued jobs of the model held back by this quota now.
    "setAt": NotRequired[str],  # When the quota was set; absent for a team with usage but no quota.
})

SignChainHeads = Dict[str, Any]

# A stream's head as of a position.
SignChainHeadsReplyDigest1HeadsItem = TypedDict("SignChainHeadsReplyDigest1HeadsItem", {
    "streamId": str,  # Event store stream id, e.g. `execution-node-1-attempt-job_01-a1`.
    "revision": str,  # Last revision of the stream at or before the digest position.
    "position": str,  # Global position of that event.
    "hash": str,  # Its chain hash.
})

# Every stream head of the event store as of a position, signed with the network signing key and chained to the previous digest.
SignChainHeadsReplyDigest1 = TypedDict("SignChainHeadsReplyDigest1", {
    "format": Literal["gpunet.chain-digest/2", "gpunet.chain-digest/1"],  # `gpunet.chain-digest/2` for every digest signed now; `gpunet.chain-digest/1` (leaves sorted by stream id) in stores signed before it, still checked.
    "sequence": int,  # 1 for the first digest of the store, then +1.
    "position": str,  # Store position covered: every event at or before it.
    "previousPosition": str,  # Position of the previous digest (`0` for the first).
    "previousDigestHash": str,  # `digestHash` of the previous digest (64 zeros for the first): digests chain too.
    "streams": int,  # How many streams the store held at `position`.
    "headsRoot": str,  # Merkle root over every stream head at `position` (leaf = sha256(0x00 ‖ canonical [streamId, revision, position, hash]), node = sha256(0x01 ‖ left ‖ right), an o
    "heads": List[SignChainHeadsReplyDigest1HeadsItem],  # The heads that changed since the previous digest, sorted by stream id (all of them in the first digest).
    "signedAt": str,  # When the notary signed (its clock).
    "publicKey": str,  # NKey public key (ed25519) of the signing key.
    "signature": str,  # base64url ed25519 signature over the canonical JSON of every other field.
})

# The digest covering the store head.
SignChainHeadsReply = TypedDict("SignChainHeadsReply", {
    "signed": bool,  # True when a new digest was recorded; false when the store had not moved since the latest one, which is returned.
    "digest": Union[SignChainHeadsReplyDigest1, None],  # The latest digest (null: nothing to sign in an empty store).
})

# A node asks storage to copy blobs of an attempt placed on it into its own bucket, on `gpunet.data.<nodeId>.stage`.
StageForNode = TypedDict("StageForNode", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "blobs": List[str],  # Addresses to copy into the node's bucket: the job's inputs (files, folder manifests and their files) or a recorded checkpoint of the job (its manifest and files
})

StageForNodeReplyBlobsItem = TypedDict("StageForNodeReplyBlobsItem", {
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
    "copiedBytes": int,  # 0 when the node's bucket held it already.
})

# Reply to StageForNode: what is now in the node's bucket.
StageForNodeReply = TypedDict("StageForNodeReply", {
    "bucket": str,  # The node's bucket, `gpunet-node-<nodeId>`; objects `<team>/<sha256>`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "blobs": List[StageForNodeReplyBlobsItem],
})

# The job's inputs could not be staged; the job will not run. Nothing is billed.
StagingFailedData = TypedDict("StagingFailedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "inputName": NotRequired[str],  # The input at fault, when one is.
    "reason": Literal["blob_missing", "checksum_mismatch", "size_mismatch", "manifest_invalid", "storage_error"],  # `blob_missing`: not uploaded; `checksum_mismatch` / `size_mismatch`: bytes differ from the spec; `manifest_invalid`: bad folder manifest; `storage_error`: gave 
    "message": str,  # What went wrong and what to do, for people.
    "failedAt": str,  # When staging gave up.
})

# Metadata every event carries; covered by the hash chain.
StagingFailedMetadata = TypedDict("StagingFailedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# The job's inputs could not be staged; the job will not run. Nothing is billed. Subject: `gpunet.evt.StagingFailed.*.*`. Schema version 1.
StagingFailed = TypedDict("StagingFailed", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["StagingFailed"],  # Always `StagingFailed`.
    "data": StagingFailedData,  # The job's inputs could not be staged; the job will not run. Nothing is billed.
    "metadata": StagingFailedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# One output file: where the job wrote it and its content address.
StoreOutputsFilesItem = TypedDict("StoreOutputsFilesItem", {
    "path": str,  # Path relative to `GPUNET_OUTPUT_DIR`, with `/` separators.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

# An output file that matched the globs but was refused.
StoreOutputsRejectedItem = TypedDict("StoreOutputsRejectedItem", {
    "path": str,  # Path relative to `GPUNET_OUTPUT_DIR`, with `/` separators; control characters escaped as in JSON (`\n`) for `invalid_name`.
    "reason": Literal["symlink_outside", "symlink_dangling", "not_regular_file", "size_cap", "changed", "unreadable", "invalid_name"],  # `symlink_outside`: a symlink pointing outside the output directory (never followed); `symlink_dangling`: points at nothing; `not_regular_file`: a directory link
    "message": str,  # What was refused and why, for people.
})

StoreOutputsLogsItem = TypedDict("StoreOutputsLogsItem", {
    "stream": Literal["stdout", "stderr"],  # Which stream.
    "sha256": str,  # Content address: lower-case hex sha256 of the bytes.
    "size": int,  # Size in bytes.
})

# Internal (execution → storage): record the outputs of an attempt whose blobs are uploaded. Idempotent per attempt. Subject: `gpunet.cmd.StoreOutputs`. Schema version 1.
StoreOutputs = TypedDict("StoreOutputs", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "files": List[StoreOutputsFilesItem],  # Output files already uploaded to the object store under the team, by content address.
    "truncated": NotRequired[bool],  # True when files were left out because `outputs.maxBytes` was reached.
    "rejected": NotRequired[List[StoreOutputsRejectedItem]],  # Files matching the globs that were refused, each with why (recorded in OutputsStored).
    "logs": NotRequired[List[StoreOutputsLogsItem]],  # The captured stdout and stderr, uploaded like outputs.
})

# The recorded outputs.
StoreOutputsReply = TypedDict("StoreOutputsReply", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "files": int,  # Number of files recorded.
    "totalBytes": int,  # Sum of their sizes.
    "duplicate": bool,  # True when this attempt's outputs were already recorded (a retried request).
})

SubmitJobSpecWork1Script1 = TypedDict("SubmitJobSpecWork1Script1", {
    "path": str,  # Path of the script inside the job's inputs (relative to `GPUNET_INPUT_DIR`), e.g. `code/train.sh`.
})

SubmitJobSpecWork1Script2 = TypedDict("SubmitJobSpecWork1Script2", {
    "inline": str,  # The script text itself; the agent writes it to a file in the run's work directory.
})

# Run a script as a process on the node.
SubmitJobSpecWork1 = TypedDict("SubmitJobSpecWork1", {
    "kind": Literal["script"],  # A script run as a process on the node.
    "script": Union[SubmitJobSpecWork1Script1, SubmitJobSpecWork1Script2],  # Where the script comes from: `{ path }` inside the inputs, or `{ inline }` text.
    "interpreter": NotRequired[str],  # Program that runs the script, e.g. `bash` or `python3`. Default: the script's `#!` line, else `sh`.
    "args": NotRequired[List[str]],  # Arguments passed to the script.
    "env": NotRequired[Dict[str, str]],  # Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.
})

# The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is held) and loaded there; `image` is then its name for people. Absent: `image` is pulled by the node when it does not hold it.
SubmitJobSpecWork2Archive = TypedDict("SubmitJobSpecWork2Archive", {
    "sha256": str,  # sha256 of the image archive (`podman save` / `docker save` / OCI archive) as `gpunet image push` stored it in the team's blobs.
    "size": int,  # Size in bytes of the archive.
    "keep": NotRequired[str],  # How long the node keeps the staged archive after the job, e.g. `1d`, so later jobs start from its cache; absent: removed at release when no job needs it.
})

# Run a container image on the node.
SubmitJobSpecWork2 = TypedDict("SubmitJobSpecWork2", {
    "kind": Literal["container"],  # A container image run on the node.
    "image": str,  # Container image reference, e.g. `ghcr.io/acme/train:1.4` (pin a digest for reproducible runs).
    "archive": NotRequired[SubmitJobSpecWork2Archive],  # The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is hel
    "command": NotRequired[List[str]],  # Overrides the image's entrypoint; default: the image's own.
    "args": NotRequired[List[str]],  # Arguments passed after the command.
    "env": NotRequired[Dict[str, str]],  # Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.
})

# One input: a file or folder by content address, placed at `path` under `GPUNET_INPUT_DIR`.
SubmitJobSpecDataInputsItem = TypedDict("SubmitJobSpecDataInputsItem", {
    "name": str,  # Name of the input, unique within the job, e.g. `dataset`.
    "path": str,  # Where the input appears, relative to `GPUNET_INPUT_DIR` (read-only), e.g. `data/train`; not `.` (the directory itself).
    "kind": NotRequired[Literal["file", "folder"]],  # `file`: sha256 addresses the file's bytes. `folder`: sha256 addresses the folder manifest (see FolderManifest).
    "sha256": str,  # Content address: sha256 of the file, or of the folder manifest for a folder.
    "size": int,  # Size in bytes of the blob that sha256 addresses (the file, or the folder manifest).
    "keep": NotRequired[str],  # Keep the staged input this long after the job, so related jobs reuse it, e.g. `7d`. Default: removed at release.
    "dataset": NotRequired[str],  # Name the input as one of the team's datasets, e.g. `imagenet-2012`: it is kept for related jobs (in the object store and in node caches) until a later job of th
})

# What the job reads.
SubmitJobSpecData = TypedDict("SubmitJobSpecData", {
    "inputs": NotRequired[List[SubmitJobSpecDataInputsItem]],  # Files and folders the job reads, by content address; staged before compute is held (staging is not billed).
})

# A signal before the time limit, so the job can checkpoint and exit; then SIGTERM at the limit, grace, SIGKILL.
SubmitJobSpecRequestWarning = TypedDict("SubmitJobSpecRequestWarning", {
    "signal": NotRequired[Literal["SIGUSR1", "SIGUSR2", "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGWINCH"]],  # Signal sent to the job's process group, e.g. `SIGUSR1`.
    "before": str,  # How long before the time limit the signal comes, e.g. `60s`.
})

# What the job needs: GPUs, model, time limit, deadline, network.
SubmitJobSpecRequest = TypedDict("SubmitJobSpecRequest", {
    "gpus": int,  # Number of GPUs, a whole number ≥ 1, e.g. `gpus: 2`. All on one node.
    "gpuModel": NotRequired[str],  # Required GPU model, e.g. `A100-80GB`. Default: any model.
    "timeLimit": str,  # Longest the job may run once started, e.g. `2h`, `90m`, `1h30m` (units ms, s, m, h, d; at most 30d). At the limit it gets SIGTERM, then SIGKILL.
    "deadline": NotRequired[str],  # When the job must be finished by, as written: an ISO-8601 time (`2025-07-01T18:00:00Z`), a duration from submission (`+6h`, `in 90m`), or a phrase in the team's
    "network": NotRequired[bool],  # Whether the job may use the network. Default `false`: no network.
    "warning": NotRequired[SubmitJobSpecRequestWarning],  # A signal before the time limit, so the job can checkpoint and exit; then SIGTERM at the limit, grace, SIGKILL.
})

# Which files of the run to keep.
SubmitJobSpecOutputs = TypedDict("SubmitJobSpecOutputs", {
    "globs": List[str],  # Glob patterns, relative to `GPUNET_OUTPUT_DIR`, of the files to keep after the run, e.g. `model/**`.
    "maxBytes": NotRequired[int],  # Most bytes of output to keep; files beyond it are skipped and the result is marked truncated.
})

# Run the job again when it fails with one of these exit codes, up to maxAttempts.
SubmitJobSpecRetry = TypedDict("SubmitJobSpecRetry", {
    "exitCodes": List[int],  # Exit codes after which the job is run again (from its last checkpoint), e.g. `[75]`. Other failures end the job.
    "maxAttempts": int,  # Most attempts that may end in one of `exitCodes`, the first one included; attempts lost with their node do not count.
})

# Saving `GPUNET_CHECKPOINT_DIR`; a later attempt of the job starts with the last saved checkpoint.
SubmitJobSpecCheckpoint = TypedDict("SubmitJobSpecCheckpoint", {
    "interval": str,  # How often `GPUNET_CHECKPOINT_DIR` is saved while the job runs, e.g. `10m` (it is always saved when the job ends).
})

# Caps on memory and disk; each defaults to the node's share per GPU.
SubmitJobSpecResources = TypedDict("SubmitJobSpecResources", {
    "memory": NotRequired[Union[str, int]],  # Most memory the job may use (its processes and what it keeps in /tmp and /dev/shm), e.g. `16GiB`; beyond it the kernel kills a process of the job. Default: the 
    "disk": NotRequired[Union[str, int]],  # Most disk the job may fill (work, outputs, checkpoints, /tmp), e.g. `100GiB`; beyond it the job is stopped (`failed`, limit `disk_limit`). Default: the node's d
})

# A gpunet job: the work, the data, the request and the outputs.
SubmitJobSpec = TypedDict("SubmitJobSpec", {
    "name": NotRequired[str],  # A label for people, e.g. `resnet50-finetune`; not unique.
    "work": Union[SubmitJobSpecWork1, SubmitJobSpecWork2],  # What to run: a script (`kind: script`) or a container image (`kind: container`).
    "data": NotRequired[SubmitJobSpecData],  # What the job reads.
    "request": SubmitJobSpecRequest,  # What the job needs: GPUs, model, time limit, deadline, network.
    "outputs": NotRequired[SubmitJobSpecOutputs],  # Which files of the run to keep.
    "retry": NotRequired[SubmitJobSpecRetry],  # Run the job again when it fails with one of these exit codes, up to maxAttempts.
    "checkpoint": NotRequired[SubmitJobSpecCheckpoint],  # Saving `GPUNET_CHECKPOINT_DIR`; a later attempt of the job starts with the last saved checkpoint.
    "resources": NotRequired[SubmitJobSpecResources],  # Caps on memory and disk; each defaults to the node's share per GPU.
})

# Submit a job spec for the caller's team. Idempotent on the idempotency key. Subject: `gpunet.cmd.SubmitJob`. Schema version 1.
SubmitJob = TypedDict("SubmitJob", {
    "spec": SubmitJobSpec,  # A gpunet job: the work, the data, the request and the outputs.
    "idempotencyKey": NotRequired[str],  # Makes the submit safe to retry: the same key (per team) returns the job first created with it. Same as the HTTP `Idempotency-Key` header.
    "estimateId": NotRequired[str],  # An estimate given to your team for this spec's request (`gpunet estimate`, `POST /v1/estimate`): the job is held to it (its JobSubmitted `quote`), so its error 
})

# One problem with an input: where, what, and how to fix it.
SubmitJobReplyWarningsItem = TypedDict("SubmitJobReplyWarningsItem", {
    "path": str,  # Dotted path of the field, e.g. `request.gpus`; empty for the whole input.
    "message": str,  # What is wrong.
    "fix": NotRequired[str],  # What to do about it.
})

# When the team has a budget: the job's worst case reserved and what remains this month.
SubmitJobReplyBudget = TypedDict("SubmitJobReplyBudget", {
    "worstCaseMicros": int,  # The job's charge at most: gpus × time limit × rate.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "monthlyMicros": NotRequired[int],  # The team's monthly budget; absent: none.
    "spentMicros": int,  # Billed this month for jobs that ended.
    "reservedMicros": int,  # Worst cases of the team's other jobs that have not ended.
    "remainingMicros": NotRequired[int],  # What remains this month after this job: monthly − spent − reserved − this job (absent without a budget).
    "onExceed": NotRequired[Literal["refuse", "hold"]],  # What a submit that would take the team past its budget gets: `refuse` (an error naming the figures; the default) or `hold` (accepted, waits in the queue with re
    "held": bool,  # True when the job waits for the budget (reason `BudgetExceeded`).
})

# The accepted job.
SubmitJobReply = TypedDict("SubmitJobReply", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "state": Literal["submitted", "staged", "placed", "running", "finishing", "completed", "failed", "timeout", "cancelled", "node_lost", "deadline", "rejected"],  # `submitted`: waiting for inputs to stage; `staged`: waiting for a node; `placed`: GPUs chosen or held; `running`: the process runs; `finishing`: ended, outputs 
    "submittedAt": str,  # When intake accepted the job.
    "duplicate": bool,  # True when the idempotency key was seen before and this is the original job.
    "warnings": NotRequired[List[SubmitJobReplyWarningsItem]],  # Accepted despite these, e.g. a deadline the current plan cannot meet under `Gpunet-Deadline-Policy: warn`.
    "budget": NotRequired[SubmitJobReplyBudget],  # When the team has a budget: the job's worst case reserved and what remains this month.
})

# The API key that made the change (its id and team), never the key itself.
TeamCreatedDataCreatedBy = TypedDict("TeamCreatedDataCreatedBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# A team was created: who created it, when, with which display name.
TeamCreatedData = TypedDict("TeamCreatedData", {
    "team": str,  # The team's id: the owner of its jobs, keys, blobs and invoices.
    "displayName": str,  # Name for people.
    "timeZone": NotRequired[str],  # IANA time zone for times shown to the team's people, e.g. `Europe/Berlin`.
    "contact": NotRequired[str],  # Who to reach about the team (an address, a channel).
    "createdBy": TeamCreatedDataCreatedBy,  # The API key that made the change (its id and team), never the key itself.
    "createdAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# Metadata every event carries; covered by the hash chain.
TeamCreatedMetadata = TypedDict("TeamCreatedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A team was created: who created it, when, with which display name. Subject: `gpunet.evt.TeamCreated.*.*`. Schema version 1.
TeamCreated = TypedDict("TeamCreated", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["TeamCreated"],  # Always `TeamCreated`.
    "data": TeamCreatedData,  # A team was created: who created it, when, with which display name.
    "metadata": TeamCreatedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# The API key that made the change (its id and team), never the key itself.
TeamDisabledDataDisabledBy = TypedDict("TeamDisabledDataDisabledBy", {
    "keyId": str,  # Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
})

# A team was disabled: from now on every key of the team is refused.
TeamDisabledData = TypedDict("TeamDisabledData", {
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "reason": NotRequired[str],  # Why, for the record.
    "disabledBy": TeamDisabledDataDisabledBy,  # The API key that made the change (its id and team), never the key itself.
    "disabledAt": str,  # UTC instant, ISO-8601 with `Z`.
})

# Metadata every event carries; covered by the hash chain.
TeamDisabledMetadata = TypedDict("TeamDisabledMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# A team was disabled: from now on every key of the team is refused. Subject: `gpunet.evt.TeamDisabled.*.*`. Schema version 1.
TeamDisabled = TypedDict("TeamDisabled", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["TeamDisabled"],  # Always `TeamDisabled`.
    "data": TeamDisabledData,  # A team was disabled: from now on every key of the team is refused.
    "metadata": TeamDisabledMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# Operator: take back a cordon or drain; the node takes new work again (NodeUncordoned). Subject: `gpunet.cmd.UncordonNode`. Schema version 1.
UncordonNode = TypedDict("UncordonNode", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "reason": NotRequired[str],  # Why, for the record.
    "by": NotRequired[str],  # Who does it, for the record (`operator <user>`); intake sets it from the operator's key.
})

# The operator's cordon or drain in force, with who, why and when.
UncordonNodeReplyNodeAdmin = TypedDict("UncordonNodeReplyNodeAdmin", {
    "state": Literal["cordoned", "draining", "drained"],  # Cordoned, or draining until NodeDrained, then drained.
    "by": str,  # The operator who did it.
    "reason": str,  # Why, in the operator's words.
    "at": str,  # When it was recorded (placement clock).
    "drainedAt": NotRequired[str],  # When the drain completed (NodeDrained).
})

# The node as it now stands.
UncordonNodeReplyNode = TypedDict("UncordonNodeReplyNode", {
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "state": Literal["ready", "cordoned", "draining", "drained", "lost", "offline"],  # ready, cordoned, draining, drained, lost or offline (see NODE_STATES).
    "hostname": NotRequired[str],  # Host name the agent registered with.
    "gpus": int,  # GPUs (or declared slots) the node offers.
    "gpusHeld": int,  # GPUs held by attempts now.
    "gpuModels": List[str],  # The models of its GPUs.
    "runningAttempts": int,  # Attempts holding GPUs on the node (placed, not yet released).
    "lastHeartbeatAt": NotRequired[str],  # Placement clock: when its last heartbeat arrived (this placement process).
    "heartbeatAgeMs": NotRequired[int],  # How long ago, at `at` of the reply.
    "leaseMs": NotRequired[int],  # Silence longer than this and the node is declared lost.
    "registeredAt": NotRequired[str],  # UTC instant, ISO-8601 with `Z`.
    "lostAt": NotRequired[str],  # When placement declared it lost (while it has not registered again).
    "admin": NotRequired[UncordonNodeReplyNodeAdmin],  # The operator's cordon or drain in force, with who, why and when.
})

# Reply to UncordonNode.
UncordonNodeReply = TypedDict("UncordonNodeReply", {
    "node": UncordonNodeReplyNode,  # The node as it now stands.
    "changed": bool,  # False when the node already was so: nothing was recorded.
    "event": NotRequired[str],  # The event recorded, when one was.
})

# One billed (or waived) run attempt: held → finished time, rate, amount and the rounding rule used.
UsageRecordedData = TypedDict("UsageRecordedData", {
    "jobId": str,  # Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.
    "attemptId": str,  # One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.
    "team": str,  # Team that owns the job and pays for it; taken from the API key, never from the spec.
    "nodeId": str,  # Execution node (one agent process) id, e.g. `node-a100-01`.
    "gpuModel": str,  # GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.
    "gpus": int,  # GPUs held by the attempt.
    "outcome": Literal["completed", "failed", "timeout", "cancelled", "node_lost", "deadline"],  # How the attempt ended: `completed` (exit 0), `failed` (non-zero exit or could not start), `timeout` (time limit hit, killed), `cancelled` (on request), `node_lo
    "heldFrom": str,  # ComputeHeld.heldAt of the attempt (agent clock).
    "finishedAt": str,  # JobFinished.finishedAt of the attempt (same agent's clock).
    "billableMs": int,  # finishedAt − heldFrom in ms, never negative.
    "rateMicrosPerGpuHour": int,  # Rate applied, micro-units per GPU per hour.
    "amountMicros": int,  # Charge: gpus × billableMs × rate / 3,600,000, rounded once by the rounding rule; 0 when waived.
    "currency": str,  # ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.
    "priceListVersion": int,  # Version of the price list the rate came from.
    "rounding": str,  # Name of the rounding rule applied, e.g. `per-line-half-up-micros` (exact value, then half up, once per line).
    "waivedReason": NotRequired[Literal["platform_fault"]],  # Present when the attempt is not charged: `platform_fault` (e.g. node lost). amountMicros is then 0.
    "recordedAt": str,  # When the ledger computed the line.
})

# Metadata every event carries; covered by the hash chain.
UsageRecordedMetadata = TypedDict("UsageRecordedMetadata", {
    "correlationId": str,  # Ties together every event caused by one request.
    "causationId": str,  # Id of the event or request that directly caused this one.
    "jobId": NotRequired[str],  # The job the event concerns, if any (indexed for audit).
    "team": NotRequired[str],  # The team the event concerns, if any (indexed for audit).
    "producer": str,  # Service or client that produced the event, e.g. `intake`.
    "occurredAt": str,  # When the producer observed or decided the fact (producer clock).
    "schemaVersion": NotRequired[int],  # Schema version of `data` when it was written; absent means 1.
    "traceparent": NotRequired[str],  # W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).
    "tracestate": NotRequired[str],  # W3C `tracestate` that goes with `traceparent`, when there is one.
})

# One billed (or waived) run attempt: held → finished time, rate, amount and the rounding rule used. Subject: `gpunet.evt.UsageRecorded.*.*`. Schema version 1.
UsageRecorded = TypedDict("UsageRecorded", {
    "streamId": str,  # Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.
    "revision": str,  # 0-based revision within the stream, as decimal text.
    "position": str,  # Global position in the store, totally ordered, as decimal text.
    "eventId": str,  # Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.
    "type": Literal["UsageRecorded"],  # Always `UsageRecorded`.
    "data": UsageRecordedData,  # One billed (or waived) run attempt: held → finished time, rate, amount and the rounding rule used.
    "metadata": UsageRecordedMetadata,  # Metadata every event carries; covered by the hash chain.
    "recordedAt": str,  # When the store recorded the event.
    "hash": str,  # Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).
})

# The event store's hash chain and signed heads verified now, incrementally from the last pass unless `full` (behind `GET /v1/audit/chain`). Subject: `gpunet.qry.ledger.VerifyChain`. Schema version 1.
VerifyChain = TypedDict("VerifyChain", {
    "full": NotRequired[bool],  # true: walk the whole store again (every link, every stream head, every signed digest). Default false: verify only what was appended since the last pass, from th
})

VerifyChainReplyLatestSignedHead1 = TypedDict("VerifyChainReplyLatestSignedHead1", {
    "sequence": int,  # The digest's sequence number.
    "position": str,  # Store position it covers.
    "signedAt": str,  # When the notary signed it.
    "publicKey": str,  # NKey public key (ed25519) that signed it.
})

# Where and why the chain is broken; absent when verified.
VerifyChainReplyFirstBad = TypedDict("VerifyChainReplyFirstBad", {
    "position": str,  # The first store position where the chain does not hold.
    "streamId": str,  # Its stream.
    "reason": str,  # Why, e.g. `hash does not match the event and its predecessor: altered or inserted`.
})

# The event store's verification status: up to which position its hash chain and signed heads hold, or where and why they do not.
VerifyChainReply = TypedDict("VerifyChainReply", {
    "verified": bool,  # True when every event up to `verifiedUpTo` links to its predecessor, every stream head holds and (with `signatures: checked`) the store reaches every signed hea
    "checkedAt": str,  # When this pass ended (the ledger's clock).
    "pass": Literal["full", "tail"],  # `full`: the whole store walked this time; `tail`: only the events after the previous pass, from the stream heads it verified.
    "verifiedUpTo": str,  # Store position up to which the chain is verified: the head when verified, the position before the first bad one when not.
    "headPosition": str,  # The store's head when this pass started.
    "events": int,  # Events verified in all, from the first position to `verifiedUpTo`.
    "checkedNow": int,  # Events this pass read and verified.
    "streams": int,  # Streams in the store up to `verifiedUpTo`.
    "durationMs": int,  # How long this pass took.
    "lastFullAt": Union[str, None],  # When the whole store was last walked (null: never, e.g. the last full pass failed).
    "signatures": Literal["checked", "unchecked"],  # `checked`: the signed digests were checked with the network public key; `unchecked`: this ledger holds no key to check them with.
    "latestSignedHead": Union[VerifyChainReplyLatestSignedHead1, None],  # The newest signed chain head digest (null: none recorded yet).
    "unsignedAfter": NotRequired[str],  # Events after this position are not yet covered by a signed digest.
    "firstBad": NotRequired[VerifyChainReplyFirstBad],  # Where and why the chain is broken; absent when verified.
})

__all__ = [
    "AdminActionRefused",
    "ApiKeyIssued",
    "ApiKeyRevoked",
    "AuditJob",
    "AuditJobReply",
    "AuditJobs",
    "AuditJobsReply",
    "AuditQueried",
    "BlobObjectRecord",
    "BudgetCleared",
    "BudgetRefused",
    "BudgetReleased",
    "BudgetReserved",
    "BudgetSet",
    "BudgetThresholdCrossed",
    "CancelJob",
    "CancelJobReply",
    "Capacity",
    "CapacityReply",
    "ChainHeadsSigned",
    "CheckpointFromNode",
    "CheckpointFromNodeReply",
    "ClearBudget",
    "ClearBudgetReply",
    "ComputeHeld",
    "ComputeReleased",
    "CordonNode",
    "CordonNodeReply",
    "CreateApiKey",
    "CreateApiKeyReply",
    "CreateTeam",
    "CreateTeamReply",
    "CreditNoteIssued",
    "DataRemoved",
    "DeadLetter",
    "DisableTeam",
    "DisableTeamReply",
    "DrainNode",
    "DrainNodeReply",
    "EnrollNode",
    "EnrollNodeReply",
    "Estimate",
    "EstimateReply",
    "EstimateGiven",
    "EstimateJob",
    "EstimateJobReply",
    "EstimateUsed",
    "FeedEntry",
    "FolderManifest",
    "GetBudget",
    "GetBudgetReply",
    "GetCharges",
    "GetChargesReply",
    "GetDisputeBundle",
    "GetDisputeBundleReply",
    "GetInvoice",
    "GetInvoiceReply",
    "GetJob",
    "GetJobReply",
    "GetQueue",
    "GetQueueReply",
    "GetQuotas",
    "GetQuotasReply",
    "GetTeam",
    "GetTeamReply",
    "Health",
    "HealthReply",
    "InputsStaged",
    "InvoiceFinalized",
    "IssueJoinToken",
    "IssueJoinTokenReply",
    "JobCancelRequested",
    "JobCheckpointed",
    "JobEnded",
    "JobFinished",
    "JobPlaced",
    "JobQuoted",
    "JobRejected",
    "JobRequeued",
    "JobSpec",
    "JobStarted",
    "JobSubmitted",
    "JobWithdrawn",
    "JoinNode",
    "JoinNodeReply",
    "LeaderElected",
    "ListApiKeys",
    "ListApiKeysReply",
    "ListCharges",
    "ListChargesReply",
    "ListInvoices",
    "ListInvoicesReply",
    "ListJobs",
    "ListJobsReply",
    "ListNodeStates",
    "ListNodeStatesReply",
    "ListNodes",
    "ListNodesReply",
    "ListPriceLists",
    "ListPriceListsReply",
    "ListTeams",
    "ListTeamsReply",
    "LogLine",
    "NodeCordoned",
    "NodeDrainRequested",
    "NodeDrained",
    "NodeEnrolled",
    "NodeHeartbeat",
    "NodeHeartbeatMessage",
    "NodeJoinTokenIssued",
    "NodeJoinTokenUsed",
    "NodeLost",
    "NodeOutputsReport",
    "NodeOutputsReportReply",
    "NodeRegistered",
    "NodeReport",
    "NodeReportReply",
    "NodeReportRefused",
    "NodeUncordoned",
    "OutputsStored",
    "PriceListPublished",
    "PublishPriceList",
    "PublishPriceListReply",
    "QuotaSet",
    "Quotas",
    "QuotasReply",
    "Quote",
    "QuoteReply",
    "ReadFeed",
    "ReadFeedReply",
    "ReadForNode",
    "ReadForNodeReply",
    "RebuildLedger",
    "RebuildLedgerReply",
    "RecordPriceList",
    "RecordPriceListReply",
    "RecordedEvent",
    "ReplayInvoice",
    "ReplayInvoiceReply",
    "RevokeApiKey",
    "RevokeApiKeyReply",
    "SetBudget",
    "SetBudgetReply",
    "SetQuota",
    "SetQuotaReply",
    "SignChainHeads",
    "SignChainHeadsReply",
    "StageForNode",
    "StageForNodeReply",
    "StagingFailed",
    "StoreOutputs",
    "StoreOutputsReply",
    "SubmitJob",
    "SubmitJobReply",
    "TeamCreated",
    "TeamDisabled",
    "UncordonNode",
    "UncordonNodeReply",
    "UsageRecorded",
    "VerifyChain",
    "VerifyChainReply",
]
