-- block-user-agents.lua: answers 403 for known scrapers and bots. The script
-- prepares the response and returns "respond", so the node leaves through its
-- respond port (wired to the client) and the upstream never runs.
local helpers = require("helpers")

local blocked = { "python-requests", "scrapy", "wget", "go-http-client" }

function execute(ctx)
  local ua = (ctx.request.headers["user-agent"] or {})[1] or ""
  for _, name in ipairs(blocked) do
    if helpers.contains_ci(ua, name) then
      ctx.response.status_code = 403
      ctx.response.headers["content-type"] = { "application/json" }
      ctx.response.body = json.encode({ error = "forbidden", message = "Blocked user agent" })
      ctx.message.blocked_ua = ua
      return ctx, "respond"
    end
  end
  return ctx
end
