--[[
phasor's job_submit.lua for Slurm 22.05+ (docs/slurm.md).

A job opts in with a comment whose first word is "phasor"
(sbatch --comment "phasor model=resnet50"). For such a job the hook sends
the job's node restrictions (partition, constraint, reservation, node and
task counts, CPUs, memory, GRES, ...) to phasor's controller
(`phasor slurm serve`) and gets a token, which it writes into the comment,
and, when Slurm would start the job now, a node list among the nodes the job
may use, which it sets as req_nodes (min_nodes = max_nodes = its size). A job
Slurm would not start now keeps its node request; the controller places it
when it can start. Every other job is returned untouched without a word.

Bounds and failure: the question goes over the controller's Unix socket
with a hard deadline (PHASOR_TIMEOUT_MS) for the whole exchange, through
LuaSocket (socket.unix, Debian's lua-socket) when Lua has it, otherwise
through one fixed helper program (PHASOR_ASK) that reads the request on
stdin from a file made by os.tmpname(); either way no job field ever
reaches a shell command line, and every value travels percent-encoded. On
ANY failure (controller or phasord down, timeout, a restriction phasor does
not model, a Lua error) the job goes on unmodified and the reason is logged:
phasor never rejects or holds a job. The hook never calls Slurm commands
(they deadlock here).

slurm_job_modify refuses a comment that gives a job a token it does not
already carry (tokens are phasor's: a copied token would claim another
job's placement).

Operators: set the three values below (the install step in docs/slurm.md).
]]

local PHASOR_ASK = "/usr/local/libexec/phasor/phasor-slurm-ask"
local PHASOR_SOCKET = "/run/phasor/slurm.sock"
local PHASOR_TIMEOUT_MS = 50

local MAX_COMMENT = 1024

local have_socket, socket_unix = pcall(require, "socket.unix")
local have_clock, socket_core = pcall(require, "socket")

local function log(fmt, ...)
	slurm.log_info("phasor: " .. fmt, ...)
end

-- Wall clock in seconds (LuaSocket's, with microseconds), or os.time().
local function now()
	if have_clock then return socket_core.gettime() end
	return os.time()
end

-- " (12.3 ms)" since `started`, when the clock has milliseconds.
local function took(started)
	if not have_clock then return "" end
	return string.format(" (%.1f ms)", (now() - started) * 1000)
end

-- The job_desc fields that restrict the nodes a job may get or make it wait,
-- and the width of the numeric ones (their "unset" values differ).
local FIELDS = {
	{"partition"}, {"features"}, {"reservation"}, {"exc_nodes"}, {"req_nodes"},
	{"tres_per_node"}, {"tres_per_job"}, {"tres_per_task"}, {"tres_per_socket"},
	{"cpus_per_tres"}, {"mem_per_tres"}, {"array_inx"}, {"dependency"}, {"clusters"},
	{"batch_features"},
	{"min_nodes", 32}, {"max_nodes", 32}, {"num_tasks", 32}, {"ntasks_per_node", 16},
	{"cpus_per_task", 16}, {"pn_min_cpus", 16}, {"min_mem_per_node", 64}, {"min_mem_per_cpu", 64},
	{"pn_min_tmp_disk", 32}, {"priority", 32}, {"begin_time", 0}, {"shared", 16},
	{"contiguous", 16}, {"req_switch", 32}, {"cores_per_socket", 16}, {"sockets_per_node", 16},
	{"threads_per_core", 16}, {"ntasks_per_socket", 16}, {"ntasks_per_core", 16},
	{"ntasks_per_board", 16}, {"boards_per_node", 16}, {"sockets_per_board", 16},
	{"core_spec", 16}, {"het_job_offset", 32},
}

local function unset(v, width)
	if v == nil then return true end
	if width == 16 then return v >= 65534 end
	if width == 32 then return v >= 4294967294 end
	if width == 64 then return v >= 9.2e18 end
	return v == 0 -- begin_time
end

local function encode(s)
	return (string.gsub(s, "[^%w%._%-,:/@%+=%[%]]", function(c) return string.format("%%%02X", string.byte(c)) end))
end

local function decode(s)
	return (string.gsub(s, "%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- The controller's answer: key=value lines, values decoded.
local function parse(reply)
	local out = {}
	for line in string.gmatch(reply, "[^\n]+") do
		local k, v = string.match(line, "^([%w_]+)=(.*)$")
		if k ~= nil then out[k] = decode(v) end
	end
	return out
end

-- The token of a comment that opts in ("phasor ... token=HEX ... [-- text]"), or nil.
local function token_of(comment)
	if type(comment) ~= "string" then return nil end
	local head = string.match(" " .. comment .. " ", "^(.-)%s%-%-%s") or comment
	if not (string.match(head, "^%s*phasor%s") or string.match(head, "^%s*phasor$")) then return nil end
	return string.match(" " .. head .. " ", "%stoken=(%S*)%s")
end

local function ask_socket(request, deadline)
	local c = socket_unix()
	local function left() return deadline - now() end
	if left() <= 0 then return nil, "no time left" end
	c:settimeout(left(), "t")
	local ok, err = c:connect(PHASOR_SOCKET)
	if not ok then
		c:close()
		return nil, "controller at " .. PHASOR_SOCKET .. ": " .. tostring(err)
	end
	local text = request .. string.format("deadline_us=%d\n", deadline * 1000000)
	c:settimeout(math.max(left(), 0.001), "t")
	local sent, serr = c:send(text)
	if sent ~= #text then
		c:close()
		return nil, "controller: send: " .. tostring(serr)
	end
	c:shutdown("send")
	c:settimeout(math.max(left(), 0.001), "t")
	local reply, rerr, partial = c:receive("*a")
	c:close()
	if reply == nil then
		if rerr == "timeout" then return nil, "controller: no answer in time" end
		return nil, "controller: " .. tostring(rerr) .. " (" .. #(partial or "") .. " bytes)"
	end
	return reply, nil
end

local function ask_helper(request)
	local path = os.tmpname() -- mkstemp: /tmp/lua_XXXXXX, created 0600
	if not string.match(path, "^[%w/_%.%-]+$") then
		os.remove(path)
		return nil, "unexpected temp file name"
	end
	local f = io.open(path, "w")
	if f == nil then
		os.remove(path)
		return nil, "cannot write " .. path
	end
	f:write(request)
	f:close()
	local p = io.popen("exec " .. PHASOR_ASK .. " " .. PHASOR_SOCKET .. " " .. PHASOR_TIMEOUT_MS .. " < " .. path .. " 2>/dev/null", "r")
	if p == nil then
		os.remove(path)
		return nil, "cannot run " .. PHASOR_ASK
	end
	local reply = p:read(4097) or ""
	p:close()
	os.remove(path)
	return reply, nil
end

local function place(job_desc, started)
	local comment = job_desc.comment
	if type(comment) ~= "string" or not (string.match(comment, "^%s*phasor%s") or string.match(comment, "^%s*phasor$")) then
		return nil -- not phasor's job: untouched, no log
	end
	if #comment > MAX_COMMENT then return "comment longer than " .. MAX_COMMENT .. " bytes" end
	local lines = {"op=submit", "comment=" .. encode(comment)}
	for _, f in ipairs(FIELDS) do
		local name, width = f[1], f[2]
		local v = job_desc[name]
		if type(v) == "string" and v ~= "" then
			table.insert(lines, name .. "=" .. encode(v))
		elseif type(v) == "number" and width ~= nil and not unset(v, width) then
			table.insert(lines, string.format("%s=%d", name, v))
		end
	end
	local request = table.concat(lines, "\n") .. "\n"
	local reply, err
	if have_socket and have_clock then
		reply, err = ask_socket(request, started + PHASOR_TIMEOUT_MS / 1000)
	else
		reply, err = ask_helper(request)
	end
	if reply == nil then return err end
	local answer = parse(reply)
	if answer.ok ~= "1" then return "controller: " .. string.sub(answer.reason or "no answer", 1, 300) end
	local token, new_comment = answer.token or "", answer.comment or ""
	if not string.match(token, "^%x+$") or #token > 64 or token_of(new_comment) ~= token then
		return "controller: malformed answer"
	end
	local nodes = answer.nodes
	if nodes ~= nil then
		local count = tonumber(answer.node_count or "")
		local n = 0
		for _ in string.gmatch(nodes, "[^,]+") do n = n + 1 end
		if not string.match(nodes, "^[%w%-%.,_]+$") or count == nil or n ~= count then
			return "controller: malformed node list"
		end
		job_desc.req_nodes = nodes
		job_desc.min_nodes = count
		job_desc.max_nodes = count
	end
	job_desc.comment = new_comment
	if nodes ~= nil then
		log("job '%s' of uid %s: nodes %s (candidate %s, score %s)%s", string.sub(tostring(job_desc.name), 1, 64),
			tostring(job_desc.user_id), nodes, string.sub(answer.candidate or "?", 1, 16), string.sub(answer.score or "?", 1, 16),
			took(started))
	else
		log("job '%s' of uid %s: token only, placed when it can start: %s%s", string.sub(tostring(job_desc.name), 1, 64),
			tostring(job_desc.user_id), string.sub(answer.unpinned or "", 1, 200), took(started))
	end
	return nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local started = now()
	local ok, why = pcall(place, job_desc, started)
	if not ok then
		log("job left unmodified: Lua error: %s", tostring(why))
	elseif why ~= nil then
		log("job left unmodified: %s%s", why, took(started))
	end
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	local ok, refused = pcall(function()
		local new = token_of(job_desc.comment)
		return new ~= nil and new ~= token_of(job_rec.comment)
	end)
	if ok and refused then
		log("refused a comment giving job %s another token (uid %s)", tostring(job_rec.job_id), tostring(modify_uid))
		slurm.log_user("phasor: a job's token is set by phasor's job_submit.lua; a comment may keep the job's own token, not give it another")
		return slurm.ERROR
	end
	return slurm.SUCCESS
end

return slurm.SUCCESS
