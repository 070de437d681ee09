-- add-request-id.lua: keeps the X-Request-Id the client sent, or makes one,
-- and records it in ctx.message for later nodes (templates: {{message.request_id}}).
local helpers = require("helpers")

function execute(ctx)
  local sent = ctx.request.headers["x-request-id"]
  local id = sent and sent[1] or helpers.random_id()
  ctx.request.headers["x-request-id"] = { id }
  ctx.message.request_id = id
  return ctx
end
