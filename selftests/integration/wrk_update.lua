-- SPDX-License-Identifier: Apache-2.0
-- wrk script for test_route_update.sh: a route that stays, the host the
-- update adds a route for, the paths the rewrite moves (/cart -> /basket),
-- and a host that stays unmatched.
local list = {
	{ "api.example.com", "/v1/status" },
	{ "new.test", "/hello" },
	{ "www.shop.test", "/cart/1" },
	{ "www.shop.test", "/basket/1" },
	{ "nohost.test", "/" },
	{ "foo.example.com", "/x" },
}
local reqs = {}
local i = 0

init = function(args)
	for k, r in ipairs(list) do
		reqs[k] = wrk.format("GET", r[2], { ["Host"] = r[1] })
	end
end

request = function()
	i = (i % #reqs) + 1
	return reqs[i]
end
