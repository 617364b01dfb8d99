--[[
phasor's job_submit.lua for Slurm 22.05+ (docs/slurm.md).

A job opts in with a comment whose first word is "phasor"
(sbatch --comment "phasor model=resnet50"). For such a job the hook asks
phasor's controller (`phasor slurm serve`) for a node list among the free
nodes, sets req_nodes (min_nodes = max_nodes = its size) and appends
"token=<hex>" to the comment, which the Prolog hands back. Every other job
is returned untouched without a word.

Bounds and failure: the question goes through one fixed program
(PHASOR_ASK) with a hard deadline (PHASOR_TIMEOUT_MS); the request travels
in a file created by os.tmpname() and read on the helper's stdin, so no job
field ever reaches a shell command line; every field is length-limited and
checked against a strict character set. On ANY failure (controller or
phasord down, timeout, no candidate, too few free nodes, a Lua error) the
job goes on unmodified and the reason is logged: phasor never rejects or
holds a job. The hook never calls Slurm commands (they deadlock here).

Operators: set the three values below (the install step in docs/slurm.md).
]]

local PHASOR_ASK = "/usr/local/libexec/phasor/phasor-slurm-ask"
local PHASOR_SOCKET = "/run/phasor/slurm.sock"
local PHASOR_TIMEOUT_MS = 50

local MAX_COMMENT = 256

local function log(fmt, ...)
	slurm.log_info("phasor: " .. fmt, ...)
end

local function unset(v)
	return v == nil or v == slurm.NO_VAL or v == slurm.NO_VAL16 or v == slurm.NO_VAL64 or v >= 4294967294
end

-- The controller's answer: key=value lines.
local function parse(reply)
	local out = {}
	for line in string.gmatch(reply, "[^\n]+") do
		local k, v = string.match(line, "^([%w_]+)=(.*)$")
		if k ~= nil then out[k] = v end
	end
	return out
end

local function ask(request)
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

local function place(job_desc)
	local comment = job_desc.comment
	if type(comment) ~= "string" or not (string.match(comment, "^ *phasor ") or string.match(comment, "^ *phasor$")) then
		return nil -- not phasor's job: untouched, no log
	end
	if #comment > MAX_COMMENT then return "comment longer than " .. MAX_COMMENT .. " bytes" end
	if not string.match(comment, "^[%w %._=%-]*$") then return "comment has characters other than [A-Za-z0-9._=- ]" end
	if string.find(comment, "token=", 1, true) then return "comment already carries a token" end
	if job_desc.req_nodes ~= nil and job_desc.req_nodes ~= "" then return "the job names its nodes" end
	local min_nodes, max_nodes = job_desc.min_nodes, job_desc.max_nodes
	local count = 1
	if not unset(min_nodes) then count = min_nodes end
	if not unset(max_nodes) and max_nodes ~= count then return "the job gives a node range" end
	if count < 1 or count > 100000 then return "node count out of range" end
	local reply, err = ask("op=submit\nnodes=" .. count .. "\ncomment=" .. comment .. "\n")
	if reply == nil then return err end
	local answer = parse(reply)
	if answer.ok ~= "1" then return "controller: " .. string.sub(answer.reason or "no answer", 1, 200) end
	local nodes, token = answer.nodes or "", answer.token or ""
	if not string.match(nodes, "^[%w%-%.,]+$") or not string.match(token, "^%x+$") or #token > 64 then
		return "controller: malformed answer"
	end
	local n = 0
	for _ in string.gmatch(nodes, "[^,]+") do n = n + 1 end
	if n ~= count then return "controller: " .. n .. " nodes for a job of " .. count end
	job_desc.req_nodes = nodes
	job_desc.min_nodes = count
	job_desc.max_nodes = count
	job_desc.comment = comment .. " token=" .. token
	log("job '%s' of uid %s: nodes %s (candidate %s, score %s)", string.sub(tostring(job_desc.name), 1, 64),
		tostring(job_desc.user_id), nodes, string.sub(answer.candidate or "?", 1, 16), string.sub(answer.score or "?", 1, 16))
	return nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local ok, why = pcall(place, job_desc)
	if not ok then
		log("job left unmodified: Lua error: %s", tostring(why))
	elseif why ~= nil then
		log("job left unmodified: %s", why)
	end
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
