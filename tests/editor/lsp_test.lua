-- Neovim's own LSP client against `policy lsp`, headless: open a policy,
-- see its diagnostics, apply a quick fix, hover a tool, complete a tool
-- name, format, and write the buffer. Works with Neovim 0.7 and later
-- (Debian's), so it uses only the client calls 0.7 has.
--
-- Environment: POLICY_BIN (the `policy` binary), POLICY_FILE (the policy to
-- open, in a folder with `.policy-lsp.toml` and the registry it names).

local bin = assert(os.getenv("POLICY_BIN"), "POLICY_BIN is not set")
local file = assert(os.getenv("POLICY_FILE"), "POLICY_FILE is not set")
local TIMEOUT = 10000

local failures = 0
local function check(ok, what, detail)
  if ok then
    io.stdout:write("ok: " .. what .. "\n")
  else
    failures = failures + 1
    io.stdout:write("FAIL: " .. what .. (detail and (": " .. vim.inspect(detail)) or "") .. "\n")
  end
end

local function finish()
  io.stdout:write(string.format("editor: %d failed\n", failures))
  io.stdout:flush()
  vim.cmd(failures == 0 and "qall!" or "cquit!")
end

local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = "policy",
    cmd = { bin, "lsp" },
    root_dir = vim.fn.fnamemodify(file, ":h"),
  })
  assert(client_id, "the client did not start")
  vim.lsp.buf_attach_client(buf, client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  check(vim.wait(TIMEOUT, function() return client.initialized end, 20), "the server initializes")

  local function diagnostics()
    return vim.diagnostic.get(buf)
  end
  local function has_code(code)
    for _, d in ipairs(diagnostics()) do
      local c = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
      if c == code then return d end
    end
    return nil
  end
  local function request(method, params)
    local answers = vim.lsp.buf_request_sync(buf, method, params, TIMEOUT)
    local a = answers and answers[client_id]
    return a and a.result, a and a.err
  end
  local function at(line, col)
    return {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      position = { line = line, character = col },
    }
  end
  local function lines()
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  end

  -- 1. Diagnostics as the file is opened: the misspelled rule word.
  check(vim.wait(TIMEOUT, function() return has_code("PL004") ~= nil end, 20),
    "the diagnostics show PL004", diagnostics())

  -- 2. The quick fix: `Defr` becomes `Defer`.
  local d = has_code("PL004")
  local actions = request("textDocument/codeAction", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.lnum, character = d.col } },
    context = { diagnostics = {} },
  }) or {}
  check(#actions > 0 and actions[1].kind == "quickfix", "a quick fix is offered", actions)
  if actions[1] then
    vim.lsp.util.apply_workspace_edit(actions[1].edit, "utf-16")
  end
  check(lines():find("Defer(mcp__github__create_issue)", 1, true) ~= nil, "the fix is applied", lines())
  check(vim.wait(TIMEOUT, function()
    return has_code("PL004") == nil and #diagnostics() == 0
  end, 20), "the diagnostics clear once it is fixed", diagnostics())

  -- 3. Hover a tool: explain's answer in the settings' mode.
  local hover = request("textDocument/hover", at(2, 10))
  local text = hover and hover.contents and hover.contents.value or ""
  check(text:find("`Read` is active in mode `agent`", 1, true) ~= nil, "hover explains `Read`", text)

  -- 4. Complete a tool name inside a rule.
  local completion = request("textDocument/completion", at(2, 9)) or {}
  local items = completion.items or completion
  local labels = {}
  for _, i in ipairs(items) do labels[i.label] = true end
  check(labels["mcp__github__create_issue"] and labels["hint:read_only"], "completion offers the registry's tools", vim.tbl_keys(labels))

  -- 5. Format: `policy fmt`'s canonical form.
  local edits = request("textDocument/formatting", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    options = { tabSize = 2, insertSpaces = true },
  })
  check(edits and #edits == 1, "formatting answers one edit", edits)
  if edits then
    vim.lsp.util.apply_text_edits(edits, buf, "utf-16")
  end
  check(lines():find("  NoDefer(Read, Bash)", 1, true) ~= nil, "the buffer is formatted", lines())

  -- 6. Write the buffer: the run script reads the file afterwards.
  vim.cmd("write")
  vim.lsp.stop_client(client_id)
end)
check(ok, "the script ran to its end", err)
finish()
