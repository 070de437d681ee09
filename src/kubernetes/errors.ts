// Loaded by the gateway and the Admin API on every start: no Kubernetes client import here.

/** An Admin API or MCP write while the configuration comes from Kubernetes: answered 409. */
export class ConfigSourceReadOnly extends Error {
  readonly source: string;
  constructor(source: string) {
    super(
      `the configuration comes from ${source} (config.source: ${source}); change it there, not through the Admin API`,
    );
    this.source = source;
  }
}
