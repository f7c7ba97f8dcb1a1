-- SPDX-License-Identifier: Apache-2.0
-- wrk script: cycle through requests on several hosts, paths and methods
-- so one run touches every route, rule and status class of
-- manifests/base, plus unmatched requests.
local list = {
	{ "GET", "api.example.com", "/v1/status" },            -- api rule 0, static 200
	{ "GET", "api.example.com", "/v1/users?status=404" },  -- api rule 2, py 404
	{ "POST", "api.example.com", "/v1/orders", "{\"n\":1}" }, -- api rule 1
	{ "GET", "foo.example.com", "/anything" },             -- wild rule 1, static
	{ "GET", "foo.example.com", "/x/s500" },               -- wild rule 1, 500
	{ "GET", "bar.baz.example.com", "/s404" },             -- wild rule 1, 404
	{ "GET", "nohost.test", "/" },                         -- unmatched
	{ "GET", "api.example.com", "/v1/items?status=503" },  -- api rule 2, 503
	{ "DELETE", "api.example.com", "/v1/items/7" },        -- api rule 2
	{ "GET", "static.example.com", "/app.js" },            -- wild rule 1
	{ "GET", "www.shop.test", "/nope" },                   -- unmatched (web vhost)
}
local reqs = {}
local i = 0

init = function(args)
	for k, r in ipairs(list) do
		local hdrs = { ["Host"] = r[2] }
		reqs[k] = wrk.format(r[1], r[3], hdrs, r[4])
	end
end

request = function()
	i = (i % #reqs) + 1
	return reqs[i]
end
