-- helpers.lua: a module for `require("helpers")`. It runs once per request,
-- in the requesting script's environment, so nothing here outlives a request.
local M = {}

-- 32 random hex digits in the 8-4-4-4-12 layout of a UUID.
function M.random_id()
  local parts = {}
  for _, width in ipairs({ 8, 4, 4, 4, 12 }) do
    local digits = {}
    for i = 1, width do
      digits[i] = string.format("%x", math.random(0, 15))
    end
    parts[#parts + 1] = table.concat(digits)
  end
  return table.concat(parts, "-")
end

function M.contains_ci(text, needle)
  return string.find(string.lower(text), string.lower(needle), 1, true) ~= nil
end

return M
