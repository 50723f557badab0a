-- wrk script of infra/scripts/load.sh: a fixed mix of the API's calls against the local server
-- on the demo seed, counting every answer by status class.
--
-- Arguments (after `--`): token, run label, then the ids to use: contact, second contact, user,
-- router. Per thread and run, writes that grow the store are bounded (MAX_CREATES new contacts,
-- MAX_DISPATCHES dispatches), so a second identical run stores only a little more data and its
-- memory can be compared with the first; PATCHes rewrite the same records.

local MAX_CREATES = 150
local MAX_DISPATCHES = 100

local threads = {}
local next_id = 1

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  token, run = args[1], args[2]
  contact, contact2, user, router = args[3], args[4], args[5], args[6]
  auth = "Bearer " .. token
  n, creates, dispatches = 0, 0, 0
  c2xx, c4xx, c5xx, cother = 0, 0, 0, 0
  json_headers = { ["Authorization"] = auth, ["Content-Type"] = "application/json" }
  read_headers = { ["Authorization"] = auth }
  form_headers = { ["Content-Type"] = "application/x-www-form-urlencoded" }
  token_form = "grant_type=client_credentials&client_id=northwind-integration"
    .. "&client_secret=dev-secret-change-me&scope=service-api%2Fread"
end

local function get(path)
  return wrk.format("GET", path, read_headers)
end

local function send(method, path, body)
  return wrk.format(method, path, json_headers, body)
end

-- One slot per request, cycled: reads dominate, as in a CRM integration.
local slots = {
  function() return get("/contacts/" .. contact .. "?properties=region,job_title") end,
  function() return get("/contacts?limit=20&properties=region") end,
  function() return send("PATCH", "/contacts/" .. contact2, '{"fields": {"job_title": "Load ' .. n .. '"}}') end,
  function() return get("/users") end,
  function()
    if creates < MAX_CREATES then
      creates = creates + 1
      return send("POST", "/contacts", string.format(
        '{"fields": {"email": "load-%s-%d-%d@example.com", "first_name": "Load", "region": "EMEA"}}',
        run, id, creates))
    end
    return get("/contacts?limit=5&archived=true")
  end,
  function() return get("/users/" .. user) end,
  function() return get("/companies?limit=10") end,
  function() return send("PATCH", "/users/" .. user, '{"phone": "+1 555 01' .. (n % 100) .. '"}') end,
  function() return get("/routers") end,
  function()
    if dispatches < MAX_DISPATCHES then
      dispatches = dispatches + 1
      return send("POST", "/dispatch/router",
        '{"router_id": "' .. router .. '", "object_id": "' .. contact .. '"}')
    end
    return get("/routers/" .. router)
  end,
  function() return get("/contacts/" .. contact2) end,
  function() return wrk.format("POST", "/oauth2/token", form_headers, token_form) end,
}

function request()
  n = n + 1
  return slots[(n % #slots) + 1]()
end

function response(status, headers, body)
  if status >= 200 and status < 300 then
    c2xx = c2xx + 1
  elseif status >= 400 and status < 500 then
    c4xx = c4xx + 1
  elseif status >= 500 then
    c5xx = c5xx + 1
  else
    cother = cother + 1
  end
end

function done(summary, latency, requests)
  local t2, t4, t5, to = 0, 0, 0, 0
  for _, thread in ipairs(threads) do
    t2 = t2 + thread:get("c2xx")
    t4 = t4 + thread:get("c4xx")
    t5 = t5 + thread:get("c5xx")
    to = to + thread:get("cother")
  end
  local e = summary.errors
  io.write(string.format(
    "LOAD requests=%d 2xx=%d 4xx=%d 5xx=%d other=%d connect=%d read=%d write=%d timeout=%d p99_ms=%.1f\n",
    summary.requests, t2, t4, t5, to, e.connect, e.read, e.write, e.timeout,
    latency:percentile(99) / 1000))
end
