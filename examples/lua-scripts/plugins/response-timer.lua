-- response-timer.lua: wired twice. Before the upstream it stamps the start
-- time in ctx.message (the key has a dot: message keys are literal); after
-- the upstream it sets X-Response-Time on the response.
--
-- os.clock() here is wall-clock seconds since the gateway started, with
-- sub-millisecond resolution.
function execute(ctx)
  local started = ctx.message["timer.started"]
  if started == nil then
    ctx.message["timer.started"] = os.clock()
  else
    local ms = (os.clock() - started) * 1000
    ctx.response.headers["x-response-time"] = { string.format("%.2fms", ms) }
  end
  return ctx
end
