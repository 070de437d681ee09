import { aiCache } from './ai-cache.js';
import { aiPromptDecorator } from './ai-prompt-decorator.js';
import { aiPromptGuard } from './ai-prompt-guard.js';
import { aiPromptTemplate } from './ai-prompt-template.js';
import { aiProxy } from './ai-proxy.js';
import { aiRateLimit } from './ai-rate-limit.js';
import { mcpProxy } from './mcp-proxy.js';
import { mcpRefuse, mcpTool } from './mcp-tool.js';

/** LLM traffic: prompt guards and rewrites, token budgets, the LLM call (docs/ai-gateway.md). */
export const aiPlugins = [
  aiProxy,
  aiPromptGuard,
  aiRateLimit,
  aiPromptTemplate,
  aiPromptDecorator,
  aiCache,
  mcpProxy,
  mcpTool,
  mcpRefuse,
] as const;
