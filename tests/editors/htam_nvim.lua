-- Headless Neovim driving the HTAM language server (docs/LSP.md).
-- Environment: HTAM_FILE (file to open), HTAM_OUT (JSON result), HTAM_PYTHON (interpreter),
-- HTAM_MEMORY_PATH (memory store), HTAM_PICK (substring of the code-action title to apply).
local out = {}
local function finish(code)
  local f = io.open(vim.env.HTAM_OUT, "w")
  f:write(vim.json.encode(out))
  f:close()
  vim.cmd(code == 0 and "qa!" or "cq!")
end
local function fail(msg)
  out.error = msg
  finish(1)
end

local ok, err = pcall(function()
  local file = vim.env.HTAM_FILE
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local status, recorded = nil, nil
  local id = vim.lsp.start({
    name = "htam",
    cmd = { vim.env.HTAM_PYTHON, "-m", "htam_server" },
    root_dir = vim.fs.dirname(file),
    init_options = { memoryPath = vim.env.HTAM_MEMORY_PATH, topN = 5 },
    handlers = {
      ["htam/status"] = function(_, result) status = result.server end,
      ["htam/recorded"] = function(_, result) recorded = result end,
    },
  }, { bufnr = buf })
  if not id then return fail("vim.lsp.start returned nil") end
  local client = vim.lsp.get_client_by_id(id)
  if not vim.wait(60000, function() return client.initialized and status == "ready" end, 50) then
    return fail("server not ready (status " .. tostring(status) .. ")")
  end
  out.offset_encoding = client.offset_encoding

  -- cursor on the kernel's name
  vim.fn.cursor(1, 1)
  if vim.fn.search(vim.env.HTAM_KERNEL .. "(", "W") == 0 then return fail("kernel name not found") end
  local pos = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local hover = vim.lsp.buf_request_sync(buf, "textDocument/hover", pos, 30000)
  local h = hover and hover[id] and hover[id].result
  out.hover = h and h.contents and h.contents.value or vim.NIL

  local params = vim.lsp.util.make_range_params(0, client.offset_encoding)
  params.context = { diagnostics = {} }
  local res = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 30000)
  local actions = res and res[id] and res[id].result or {}
  out.titles = {}
  local chosen
  for _, a in ipairs(actions) do
    table.insert(out.titles, a.title)
    if not chosen and a.title:find(vim.env.HTAM_PICK, 1, true) then chosen = a end
  end
  if not chosen then return fail("no action matching " .. vim.env.HTAM_PICK) end
  out.chosen = chosen.title

  local resolved = client:request_sync("codeAction/resolve", chosen, 30000, buf)
  if not resolved or resolved.err or not resolved.result.edit then
    return fail("resolve failed: " .. vim.inspect(resolved))
  end
  local action = resolved.result
  vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
  vim.cmd("write")
  local r = client:request_sync("workspace/executeCommand",
    { command = action.command.command, arguments = action.command.arguments }, 30000, buf)
  out.command_result = r and r.result or vim.NIL
  if not vim.wait(60000, function() return recorded ~= nil end, 50) then
    return fail("no htam/recorded notification")
  end
  out.recorded = recorded
  finish(0)
end)
if not ok then fail("lua error: " .. tostring(err)) end
