module shipit

go 1.22
