/**
 * gpunet's NATS authorization: permission templates per identity kind
 * (`deploy/nats-permissions.yaml`) rendered into a nats-server 2.9+ config with one NKey user per
 * service, node, team and operator. nats-server enforces it; nothing of ours sits in between.
 */
export {
  PermissionTemplates,
  PermissionsError,
  identityNameOf,
  loadPermissionTemplates,
  parsePermissionTemplates,
  renderPermissions,
  standingDurables,
  type IdentityRef,
  type StandingDurable,
  type RenderedPermissions,
} from './permissions.js';
export { identitiesInDir, identityRefOf, renderAuthorization, renderClusterConfig, renderServerConfig, type ClusterServerValues, serverUsers, writeServerConfig, type NetworkIdentity, type ServerConfigOptions, type ServerUser } from './server-config.js';
export { defaultClusterTemplateFile, defaultPermissionsFile } from './files.js';
