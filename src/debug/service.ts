import type { DebugConfig } from '../config/system.js';
import { createRedaction } from './redaction.js';
import type { CaptureOptions } from './snapshot.js';
import { TraceStore } from './store.js';
import { createDebugTap, RESPONSE_ORIGIN_HEADER, TRACE_ID_HEADER, type DebugTap } from './tap.js';
import { createTriggerGate, DEFAULT_DEBUG_ALLOWED_CIDRS } from './trigger-gate.js';

/**
 * Debug mode of one gateway, built once from system.yaml (never reloaded, so
 * an Admin credential alone cannot switch capture on): the trace buffer, the
 * capture options shared by live and sandbox runs, and the data-plane tap.
 */
export class DebugService {
  readonly config: DebugConfig;
  readonly store: TraceStore;
  readonly capture: CaptureOptions;
  /** Undefined when debug is off: the data plane then installs its plain handler. */
  readonly tap: DebugTap | undefined;

  constructor(config: DebugConfig) {
    this.config = config;
    this.store = new TraceStore(config.enabled ? config.max_traces : 0);
    this.capture = {
      captureBodies: config.capture_bodies,
      maxBodyBytes: config.max_body_bytes,
      // With a header secret the trigger header is a credential: it must not show in traces.
      redaction: createRedaction(
        config.header_secret === undefined
          ? config
          : { ...config, redact_headers: [...config.redact_headers, config.trigger_header] },
      ),
    };
    this.tap = config.enabled
      ? createDebugTap(this.store, {
          capture: this.capture,
          maxSteps: config.max_steps,
          triggerHeader: config.trigger_header.toLowerCase(),
          traceIdHeader: (config.trace_id_header ?? TRACE_ID_HEADER).toLowerCase(),
          traceAll: config.trace_all,
          gate: createTriggerGate(config),
        })
      : undefined;
  }

  get enabled(): boolean {
    return this.config.enabled;
  }

  get sandboxEnabled(): boolean {
    return this.config.enabled && this.config.sandbox;
  }

  /** `GET /api/debug/config`: the effective settings, answered even when debug is off. */
  settings(): Record<string, unknown> {
    const c = this.config;
    return {
      enabled: c.enabled,
      sandbox: c.sandbox,
      trigger_header: c.trigger_header.toLowerCase(),
      allowed_cidrs: c.allowed_cidrs ?? [...DEFAULT_DEBUG_ALLOWED_CIDRS],
      header_secret_set: c.header_secret !== undefined,
      trace_all: c.trace_all,
      capture_bodies: c.capture_bodies,
      max_body_bytes: c.max_body_bytes,
      max_traces: c.max_traces,
      max_steps: c.max_steps,
      sandbox_timeout_seconds: c.sandbox_timeout_seconds,
      redact_headers: c.redact_headers,
      redact_query_params: c.redact_query_params,
      redact_message_keys: c.redact_message_keys,
      redaction: this.capture.redaction.describe(),
      trace_id_header: (c.trace_id_header ?? TRACE_ID_HEADER).toLowerCase(),
      response_origin_header: RESPONSE_ORIGIN_HEADER,
      traces_stored: this.store.size,
    };
  }
}
