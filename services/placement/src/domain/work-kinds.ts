/**
 * Work kinds a node can run: every node runs scripts; `kind: container` needs a node whose agent
 * registered a container runtime. Pure.
 */
import type { FieldIssue } from '#contracts';
import type { JobRecord, NodeRecord } from './state.js';

/**
 * Why no registered node can run the job's kind of work, or undefined when one can. Checked
 * with the other never-satisfiable reasons, before a placement, so compute is never held for
 * work the node cannot start.
 */
export function missingRuntime(job: Pick<JobRecord, 'needsContainer'>, nodes: readonly Pick<NodeRecord, 'containerRuntimes'>[]): { message: string; issue: FieldIssue } | undefined {
  if (!job.needsContainer || nodes.some((n) => (n.containerRuntimes ?? []).length > 0)) return undefined;
  return {
    message: 'the job is container work, and no node has a container runtime (docker or podman): the network runs scripts only',
    issue: {
      path: 'work.kind',
      message: 'container work needs a container runtime (docker or podman) on a node; none has one',
      fix: 'run it as a script (`work: { kind: script, ... }`), or add a node whose docker or podman daemon answers',
    },
  };
}
