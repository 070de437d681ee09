import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One registered instance; `status` as Eureka spells it. */
export interface EurekaInstance {
  instanceId: string;
  ipAddr: string;
  port: number;
  status: 'UP' | 'DOWN' | 'STARTING' | 'OUT_OF_SERVICE';
  metadata?: Record<string, string>;
}

export interface EurekaServer {
  /** `http://127.0.0.1:<port>`, for `address:`. */
  readonly url: string;
  /** Requests for `/eureka/apps/<app>` so far, with their Accept header. */
  readonly queries: { app: string; accept: string }[];
  register(app: string, instance: EurekaInstance): void;
  deregister(app: string, instanceId: string): void;
  setStatus(app: string, instanceId: string, status: EurekaInstance['status']): void;
  close(): Promise<void>;
}

/**
 * The read side of Eureka's REST API (github.com/Netflix/eureka/wiki/Eureka-REST-operations):
 * `GET /eureka/apps/<APP>` answers `{"application": {"name", "instance": …}}` in JSON when
 * asked with `Accept: application/json`, app names upper-cased as Eureka stores them, a single
 * instance as an object and several as a list (the XML-to-JSON shape Eureka really sends),
 * ports as `{"$": 8080, "@enabled": "true"}`; an unknown app is 404.
 */
export async function startEurekaServer(): Promise<EurekaServer> {
  const apps = new Map<string, Map<string, EurekaInstance>>();
  const queries: { app: string; accept: string }[] = [];
  const sockets = new Set<Socket>();
  const instanceJson = (app: string, i: EurekaInstance) => ({
    instanceId: i.instanceId,
    hostName: `${i.instanceId}.local`,
    app,
    ipAddr: i.ipAddr,
    status: i.status,
    overriddenStatus: 'UNKNOWN',
    port: { $: i.port, '@enabled': 'true' },
    securePort: { $: 443, '@enabled': 'false' },
    countryId: 1,
    dataCenterInfo: { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' },
    leaseInfo: { renewalIntervalInSecs: 30, durationInSecs: 90 },
    metadata: i.metadata ?? { '@class': 'java.util.Collections$EmptyMap' },
    vipAddress: app.toLowerCase(),
    isCoordinatingDiscoveryServer: 'false',
    lastUpdatedTimestamp: String(Date.now()),
    actionType: 'ADDED',
  });
  const server = createServer((req, res) => {
    const m = /^\/eureka\/apps\/([^/?]+)$/.exec(req.url ?? '');
    if (req.method !== 'GET' || m === null) {
      res.writeHead(404).end();
      return;
    }
    const app = decodeURIComponent(m[1]!).toUpperCase();
    queries.push({ app, accept: req.headers.accept ?? '' });
    const instances = [...(apps.get(app)?.values() ?? [])];
    if (instances.length === 0) {
      res.writeHead(404).end();
      return;
    }
    const list = instances.map((i) => instanceJson(app, i));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ application: { name: app, instance: list.length === 1 ? list[0] : list } }));
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const find = (app: string, id: string) => {
    const instance = apps.get(app.toUpperCase())?.get(id);
    if (instance === undefined) throw new Error(`no instance ${id} of ${app}`);
    return instance;
  };
  return {
    url: `http://127.0.0.1:${port}`,
    queries,
    register(app, instance) {
      const key = app.toUpperCase();
      let instances = apps.get(key);
      if (instances === undefined) apps.set(key, (instances = new Map<string, EurekaInstance>()));
      instances.set(instance.instanceId, { ...instance });
    },
    deregister(app, id) {
      apps.get(app.toUpperCase())?.delete(id);
    },
    setStatus(app, id, status) {
      find(app, id).status = status;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
