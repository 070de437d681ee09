import { aiPromptGuard } from './ai-prompt-guard.js';

/** LLM traffic: prompt guards and rewrites, token budgets, the LLM call (docs/ai-gateway.md). */
export const aiPlugins = [aiPromptGuard] as const;
