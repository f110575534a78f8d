import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { defaultClusterTemplateFile, defaultPermissionsFile } from './files.js';
import { PermissionsError, parsePermissionTemplates, renderPermissions, standingDurables } from './permissions.js';
import { renderClusterConfig, renderServerConfig, serverUsers } from './server-config.js';

const templates = parsePermissionTemplates(readFileSync(defaultPermissionsFile(), 'utf8'));
const key = (c: string) => `U${c.repeat(55)}`;

describe('deploy/nats-permissions.yaml', () => {
  it('renders a template for every kind of identity, each with its own inbox only', () => {
    for (const ref of [
      { kind: 'service', id: 'intake' },
      { kind: 'service', id: 'placement' },
      { kind: 'service', id: 'storage' },
      { kind: 'service', id: 'ledger' },
      { kind: 'service', id: 'recorder' },
      { kind: 'node', id: 'node-1' },
      { kind: 'team', id: 'ml' },
      { kind: 'operator' },
    ] as const) {
      const p = renderPermissions(templates, ref, ['ml', 'bio']);
      expect(p.publish.length).toBeGreaterThan(0);
      expect(p.subscribe.join(' ')).not.toMatch(/\{|\}|@/);
      expect(p.publish.join(' ')).not.toMatch(/\{|\}|@/);
      if (ref.kind !== 'operator') {
        expect(p.subscribe.filter((s) => s.startsWith('_INBOX'))).toEqual([`_INBOX_${ref.kind === 'service' ? 'svc' : ref.kind}-${ref.id}.>`]);
        expect(p.subscribe).not.toContain('>');
        expect(p.publish).not.toContain('>');
      }
    }
  });

  it('lets a service publish only the events contracts/ says it writes', () => {
    const ledger = renderPermissions(templates, { kind: 'service', id: 'ledger' }, []);
    expect(ledger.publish).toContain('gpunet.evt.PriceListPublished.*.*');
    expect(ledger.publish).not.toContain('gpunet.evt.JobFinished.*.*');
    // Each event right is one type's subjects exactly: never a wildcard in the type's place.
    for (const s of ledger.publish.filter((x) => x.startsWith('gpunet.evt.'))) expect(s).toMatch(/^gpunet\.evt\.[A-Za-z]+\.\*\.\*$/);
    const intake = renderPermissions(templates, { kind: 'service', id: 'intake' }, []);
    expect(intake.publish).toEqual(expect.arrayContaining(['gpunet.evt.JobSubmitted.*.*', 'gpunet.qry.ledger.GetCharges', 'gpunet.qry.ledger.AuditJobs', 'gpunet.cmd.RecordPriceList', 'gpunet.qry.placement.Estimate']));
    expect(intake.publish).not.toContain('gpunet.evt.PriceListPublished.*.*');
  });

  it('lets every service look at the durables GPUNET_EVENTS keeps its messages for, and never make, change, read, acknowledge or delete another\'s', () => {
    for (const [partitions, standing] of [
      [1, ['storage-released', 'storage', 'placement', 'ledger']],
      [2, ['storage-released', 'storage', 'placement', 'ledger-p0', 'ledger-p1']],
    ] as const) {
      expect(standingDurables(partitions).map((d) => d.durable)).toEqual(standing);
      const intake = renderPermissions(templates, { kind: 'service', id: 'intake' }, [], [], { eventPartitions: partitions });
      expect(intake.publish.filter((s) => s.startsWith('$JS.API.CONSUMER.INFO.GPUNET_EVENTS.') && !s.includes('.intake')).sort()).toEqual(standing.map((d) => `$JS.API.CONSUMER.INFO.GPUNET_EVENTS.${d}`).sort());
      // Every right on a consumer of the events names intake's own durables, and nothing else.
      const own = partitions > 1 ? ['intake', 'intake-p0', 'intake-p1'] : ['intake'];
      for (const s of intake.publish.filter((x) => /CONSUMER\.(CREATE|DURABLE|MSG|DELETE)|\$JS\.ACK/.test(x) && x.includes('GPUNET_EVENTS'))) {
        expect(own).toContain(/GPUNET_EVENTS\.([^.]+)/.exec(s)![1]);
      }
    }
    // Nodes and teams have no right on the events' consumers at all.
    for (const ref of [{ kind: 'node', id: 'n1' }, { kind: 'team', id: 'ml' }] as const) {
      expect(renderPermissions(templates, ref, ['ml']).publish.filter((s) => s.includes('GPUNET_EVENTS'))).toEqual([]);
    }
  });

  it('lets storage use its second durable, `storage-released` (decision 0054), and its dead letters; no other service, and no lease of that name', () => {
    const storage = renderPermissions(templates, { kind: 'service', id: 'storage' }, []);
    const rights = (durable: string) => [
      `$JS.API.CONSUMER.DURABLE.CREATE.GPUNET_EVENTS.${durable}`,
      `$JS.API.CONSUMER.MSG.NEXT.GPUNET_EVENTS.${durable}`,
      `$JS.ACK.GPUNET_EVENTS.${durable}.>`,
      `gpunet.dlq.${durable}`,
    ];
    expect(storage.publish).toEqual(expect.arrayContaining([...rights('storage'), ...rights('storage-released')]));
    expect(storage.publish.filter((s) => s.includes('gpunet-leases.')).every((s) => s.endsWith('gpunet-leases.storage'))).toBe(true);
    for (const id of ['intake', 'placement', 'ledger', 'recorder']) {
      const publish = renderPermissions(templates, { kind: 'service', id }, [], [], { eventPartitions: 2 }).publish;
      expect({ id, granted: rights('storage-released').filter((s) => publish.includes(s)) }).toEqual({ id, granted: [] });
    }
    // A durable name that is not a subject token is refused, naming the field.
    const file = YAML.parse(readFileSync(defaultPermissionsFile(), 'utf8')) as { kinds: Record<string, unknown> };
    const bad = YAML.stringify({ ...file, kinds: { ...file.kinds, services: { storage: { durables: ['a.b'] } } } });
    expect(() => parsePermissionTemplates(bad)).toThrow(/kinds\.services\.storage\.durables\.0: a durable name is letters, digits, _ and -/);
  });

  it('lets a service of a partitioned network publish its events with their partition and use its partitions\' durables', () => {
    const ledger = renderPermissions(templates, { kind: 'service', id: 'ledger' }, [], [], { eventPartitions: 2 });
    expect(ledger.publish).toEqual(expect.arrayContaining(['gpunet.evt.PriceListPublished.*.*', 'gpunet.evt.PriceListPublished.*.*.*']));
    expect(ledger.publish).not.toContain('gpunet.evt.JobFinished.*.*.*');
    for (const durable of ['ledger', 'ledger-p0', 'ledger-p1']) expect(ledger.publish).toContain(`$JS.API.CONSUMER.MSG.NEXT.GPUNET_EVENTS.${durable}`);
    expect(ledger.publish).not.toContain('$JS.API.CONSUMER.MSG.NEXT.GPUNET_EVENTS.ledger-p2');
    // Each partition's lease key (decision 0029), named as its durable; no other role's key.
    const leaseKeys = ledger.publish.filter((s) => s.startsWith('$KV.gpunet-leases.'));
    expect(leaseKeys.sort()).toEqual(['$KV.gpunet-leases.ledger', '$KV.gpunet-leases.ledger-p0', '$KV.gpunet-leases.ledger-p1']);
    expect(renderPermissions(templates, { kind: 'service', id: 'recorder' }, []).publish.filter((s) => s.includes('gpunet-leases.'))).toEqual([
      '$KV.gpunet-leases.recorder',
      '$JS.API.DIRECT.GET.KV_gpunet-leases.$KV.gpunet-leases.recorder',
    ]);
    expect(ledger.publish.filter((s) => s.includes('placement'))).toEqual(renderPermissions(templates, { kind: 'service', id: 'ledger' }, []).publish.filter((s) => s.includes('placement')));
    // One partition: exactly the rights of an unpartitioned network.
    expect(renderPermissions(templates, { kind: 'service', id: 'ledger' }, [], [], { eventPartitions: 1 })).toEqual(renderPermissions(templates, { kind: 'service', id: 'ledger' }, []));
    // A node's rights do not change: it publishes no events and has one durable.
    expect(renderPermissions(templates, { kind: 'node', id: 'n1' }, ['ml'], [], { eventPartitions: 4 })).toEqual(renderPermissions(templates, { kind: 'node', id: 'n1' }, ['ml']));
  });

  it('gives a team its own API subjects, bucket and logs, and nothing of the event stream or the ledger', () => {
    const team = renderPermissions(templates, { kind: 'team', id: 'ml' }, ['ml', 'bio']);
    expect(team.publish).toEqual(expect.arrayContaining(['gpunet.cmd.SubmitJob', 'gpunet.qry.intake.GetJob', '$O.gpunet-blobs-ml.>']));
    expect(team.publish.filter((s) => s.startsWith('gpunet.evt') || s.startsWith('gpunet.qry.ledger') || s.includes('bio') || s.includes('STREAM.CREATE') || s.includes('CONSUMER'))).toEqual([]);
    expect(team.subscribe).toEqual(['_INBOX_team-ml.>', 'gpunet.logs.ml.>', 'gpunet.feed.ml.>']);
    expect(team.allowResponses).toBe(false);
  });

  it('lets a node publish its own heartbeats and consume its own consumer only', () => {
    const node = renderPermissions(templates, { kind: 'node', id: 'n1' }, ['ml']);
    expect(node.publish).toContain('gpunet.hb.n1');
    expect(node.publish).not.toContain('gpunet.hb.*');
    expect(node.publish).not.toContain('gpunet.evt.PriceListPublished.*.*');
    expect(node.publish).toContain('$JS.API.CONSUMER.MSG.NEXT.GPUNET_WORK.execution-n1');
    expect(node.publish).toContain('gpunet.report.n1.*');
    expect(node.publish.filter((s) => s.startsWith('gpunet.evt.') || s.includes('GPUNET_EVENTS') || s.startsWith('gpunet.cmd.'))).toEqual([]);
    expect(node.publish.filter((s) => s.includes('STREAM.CREATE') || s.includes('STREAM.UPDATE'))).toEqual([]);
  });

  it('gives a node its own bucket, its own log subjects and its own storage requests: no team\'s bucket, no other node\'s', () => {
    const node = renderPermissions(templates, { kind: 'node', id: 'n1' }, ['ml', 'bio'], ['n1', 'n2']);
    expect(node.publish).toEqual(expect.arrayContaining(['$O.gpunet-node-n1.>', '$JS.API.DIRECT.GET.OBJ_gpunet-node-n1.>', 'gpunet.logs.*.*.n1', 'gpunet.data.n1.*']));
    expect(node.publish.filter((s) => s.includes('gpunet-blobs') || s.includes('n2') || s.includes('ml') || s.includes('bio'))).toEqual([]);
    expect(node.publish).not.toContain('gpunet.logs.*.*');
    expect(node.publish.filter((s) => s.startsWith('gpunet.logs.') && !s.endsWith('.n1'))).toEqual([]);
  });

  it('renders the each_team rules once per team for the services that act on every team', () => {
    const storage = renderPermissions(templates, { kind: 'service', id: 'storage' }, ['ml', 'bio']);
    expect(storage.publish).toEqual(expect.arrayContaining(['$O.gpunet-blobs-ml.>', '$O.gpunet-blobs-bio.>', '$JS.API.STREAM.CREATE.OBJ_gpunet-blobs-bio']));
  });

  it('renders the each_node rules once per node: storage reaches every node\'s own bucket and answers every node\'s requests', () => {
    const storage = renderPermissions(templates, { kind: 'service', id: 'storage' }, ['ml'], ['n1', 'n2']);
    expect(storage.publish).toEqual(expect.arrayContaining(['$O.gpunet-node-n1.>', '$O.gpunet-node-n2.>', '$JS.API.STREAM.CREATE.OBJ_gpunet-node-n2']));
    expect(storage.subscribe).toContain('gpunet.data.*.*');
    expect(renderPermissions(templates, { kind: 'service', id: 'ledger' }, ['ml'], ['n1']).publish.filter((s) => s.includes('gpunet-node'))).toEqual([]);
  });

  it('refuses a placeholder left unfilled, naming it and where it is', () => {
    const broken = parsePermissionTemplates(`
kinds:
  service: { publish: ["gpunet.logs.{team}.>"] }
  node: {}
  team: {}
  operator: {}
`);
    expect(() => renderPermissions(broken, { kind: 'service', id: 'ledger' }, ['ml'])).toThrow(PermissionsError);
    expect(() => renderPermissions(broken, { kind: 'service', id: 'ledger' }, ['ml'])).toThrow(/kinds\.service.*\{team\}.*no value/);
  });

  it('refuses an unknown macro or service, a field it does not know, and an id that is not a token', () => {
    const bad = (publish: string) => parsePermissionTemplates(`kinds: { service: { publish: ["${publish}"] }, node: {}, team: {}, operator: {} }`);
    expect(() => renderPermissions(bad('@everything'), { kind: 'service', id: 'ledger' }, [])).toThrow(/unknown macro/);
    expect(() => renderPermissions(bad('@events-of:billing'), { kind: 'service', id: 'ledger' }, [])).toThrow(/no service `billing`/);
    expect(() => parsePermissionTemplates('kinds: { service: { publsh: [] }, node: {}, team: {}, operator: {} }')).toThrow(/kinds\.service/);
    expect(() => renderPermissions(templates, { kind: 'team', id: 'a.b' }, [])).toThrow(PermissionsError);
  });
});

describe('renderServerConfig', () => {
  it('writes one NKey user per identity, deny-by-default lists, listen and the JetStream store', () => {
    const text = renderServerConfig(templates, {
      listen: '127.0.0.1:4222',
      storeDir: '/var/lib/gpunet/nats',
      identities: [
        { kind: 'service', id: 'ledger', publicKey: key('A') },
        { kind: 'team', id: 'ml', publicKey: key('B') },
        { kind: 'operator', publicKey: key('C') },
      ],
    });
    expect(text).toContain('listen: "127.0.0.1:4222"');
    expect(text).toContain('jetstream { store_dir: "/var/lib/gpunet/nats" }');
    expect(text.match(/nkey: "U/g)).toHaveLength(3);
    expect(text).toContain('# team-ml');
    expect(text).toContain('"$O.gpunet-blobs-ml.>"');
    expect(text).not.toMatch(/password|seed|SU[A-Z2-7]{50}/i);
  });

  it('refuses two identities with one key, and a key that is not a user key', () => {
    expect(() => serverUsers(templates, [{ kind: 'team', id: 'a', publicKey: key('A') }, { kind: 'team', id: 'b', publicKey: key('A') }])).toThrow(/a key of its own/);
    expect(() => serverUsers(templates, [{ kind: 'team', id: 'a', publicKey: 'SUABC' }])).toThrow(/not an NKey user public key/);
  });
});

describe('renderClusterConfig (deploy/nats/cluster.conf)', () => {
  const values = {
    serverName: 'ctl-1',
    clientListen: '10.0.0.1:4222',
    routeListen: '10.0.0.1:6222',
    routes: ['10.0.0.1:6222', '10.0.0.2:6222', '10.0.0.3:6222'],
    routePassword: 'a'.repeat(43),
    storeDir: '/var/lib/gpunet/nats',
    monitorListen: '127.0.0.1:8222',
    authorizationFile: 'authorization.conf',
  };

  it('fills every placeholder of the template, routes carrying the route user and password', () => {
    const text = renderClusterConfig(readFileSync(defaultClusterTemplateFile(), 'utf8'), values);
    const config = text.split('\n').filter((l) => !/^\s*#/.test(l)).join('\n');
    expect(config).not.toMatch(/\{\{/);
    expect(config).toContain('server_name: "ctl-1"');
    expect(config).toContain(`"nats-route://gpunet-route:${'a'.repeat(43)}@10.0.0.3:6222"`);
    expect(config).toContain('include "authorization.conf"');
    expect(config).toMatch(/cluster \{[\s\S]*name: gpunet[\s\S]*authorization \{/);
  });

  it('refuses a placeholder without a value and a short route password', () => {
    expect(() => renderClusterConfig('listen: {{nope}}', values)).toThrow(/no value for \{\{nope\}\}/);
    expect(() => renderClusterConfig('x', { ...values, routePassword: 'short' })).toThrow(/route password/);
  });
});
