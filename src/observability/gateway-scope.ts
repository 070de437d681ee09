import { createScope, type GatewayScope, type GatewayScopeOptions } from '../core/gateway-scope.js';
import { GatewayMetrics } from './metrics.js';

/**
 * A gateway's scope (src/core/gateway-scope.ts) with its metrics registry:
 * the given one, or a fresh one when compiling outside a gateway (tests).
 */
export function createGatewayScope(
  options: Partial<GatewayScopeOptions<GatewayMetrics>> = {},
): GatewayScope<GatewayMetrics> {
  return createScope({ ...options, metrics: options.metrics ?? new GatewayMetrics() });
}
