!> The one model interface every pyint integrator consumes (Fortran side).
!>
!> A constrained mechanical system
!>
!>     M(q) a = f(t, q, v) - G(t, q)^T lam_h - A(t, q)^T lam_n
!>     g(t, q) = 0                    (mh holonomic constraints, G = g_q)
!>     A(t, q) v + b(t, q) = 0        (mn nonholonomic constraints)
!>
!> The Python mirror is pyint.models.base.Model: the same items, the same
!> names, the same sign conventions.  A model extends model_t and overrides
!> what it knows analytically; everything not overridden falls back to a
!> central finite difference of the items it is derived from (correct, slower),
!> except what the model's flags make zero: mass_dq and mass_dqq for const_mass, force_jac
!> for const_force, hol_t for scleronomic; a constant mass matrix may be set
!> once (mconst) instead of overriding mass.  energy is 1/2 v^T M v + potential
!> (a model with forces from a potential overrides potential only).  Built-in
!> models override every other item (tests check each one against finite
!> differences) and bind init, their constructor from (ipar, rpar) (parameters
!> checked with rpar_error; fortran/models/registry.f90).
!>
!> Acceleration-level constraints are written  G a + hol_gamma = 0  and
!> A a + nh_gamma = 0, i.e.
!>     hol_gamma = (G v)_q v + 2 G_t v + g_tt,
!>     nh_gamma  = (A v + b)_q v + A_t v + b_t.
!>
!> Structured evaluation (what makes large models cheap).  The items above are
!> dense arrays: O(n^2) memory and work per call.  The kernels do not need
!> them as arrays; they need operator applications and the Newton matrix:
!>     mass_mul      M(q) a                                   (n)
!>     hol_vel       G v + g_t                                (mh)
!>     hol_jac_tmul  G^T lam                                  (n)
!>     nh_vel        A v + b                                  (mn)
!>     nh_jac_tmul   A^T lam                                  (n)
!>     add_qq        asm += c1 M + c2 (M a)_q + c3 f_q + c4 f_v + c5 (G^T lh)_q + c6 (A^T ln)_q
!>     add_hol_jac   asm += s G   (or s G^T)
!>     add_hol_vel_q asm += s (G v + g_t)_q
!>     add_nh_jac    asm += s A   (or s A^T)
!>     add_nh_vel_q  asm += s (A v + b)_q
!> (each add_* writes its block at row offset r0, column offset c0 of the
!> assembler `asm`, a pyint_newton_matrix%newton_matrix_t).  The defaults
!> below go through the dense items, so every model works unchanged; a model
!> with structure overrides them with O(nnz) code (pendulum_chain.f90).  The
!> sparsity pattern is declared by these add_* routines themselves: the
!> kernels call them once in recording mode, so an override must add every
!> entry it can ever touch whatever its value (zeros included), and may skip
!> an item only when its coefficient is zero.  The dense defaults add all
!> entries: a model without overrides gets a dense pattern.
module pyint_model
  use pyint_kinds
  use pyint_newton_matrix, only: newton_matrix_t
  implicit none
  private
  public :: model_t, consistent_acceleration, impose_constraints, index1_matrix, index1_solution, index1_rhs, &
            diagonal_matrix, rpar_error
  public :: default_mass_mul, default_hol_jac_tmul, default_nh_jac_tmul, default_add_qq, &
            default_add_hol_jac, default_add_hol_vel_q, default_add_nh_jac, default_add_nh_vel_q

  real(wp), parameter :: FD_EPS = 6.0e-6_wp   !< ~ eps**(1/3), relative step of the fallbacks
  !> The items the finite-difference fallbacks differentiate (fd_item), and by what.
  integer, parameter :: IT_MASS_A = 1, IT_FORCE = 2, IT_HOL = 3, IT_HOL_VEL = 4, IT_HOL_TL = 5, &
                        IT_NH_VEL = 6, IT_NH_TL = 7, IT_MASS_DQ_W = 8
  integer, parameter :: BY_Q = 1, BY_V = 2, BY_T = 3

  type, abstract :: model_t
    integer :: n = 0             !< number of coordinates
    integer :: mh = 0            !< number of holonomic constraints
    integer :: mn = 0            !< number of nonholonomic constraints
    logical :: const_mass = .true.
    logical :: has_energy = .false.
    logical :: const_force = .false.   !< f depends on neither q nor v: force_jac = 0
    logical :: scleronomic = .false.   !< g does not depend on t: hol_t = 0
    real(wp), allocatable :: mconst(:, :)   !< the constant M of a model that sets it instead of overriding mass
  contains
    procedure :: mass          !< M(q)                                    (n, n)
    procedure(force_i), deferred :: force
    procedure :: mass_dq       !< D = d(M(q) a)/dq                      (n, n)
    procedure :: mass_dqq      !< K = d(D(q, a) w)/dq                   (n, n)
    procedure :: force_jac     !< fq = df/dq, fv = df/dv                 (n, n) each
    procedure :: hol           !< g(t, q)                                (mh)
    procedure :: hol_jac       !< G = g_q                                (mh, n)
    procedure :: hol_t         !< g_t                                    (mh)
    procedure :: hol_vel_q     !< d(G v + g_t)/dq                        (mh, n)
    procedure :: hol_gamma     !< (G v)_q v + 2 G_t v + g_tt             (mh)
    procedure :: hol_gtl_q     !< d(G^T lam)/dq                          (n, n)
    procedure :: nh            !< A(t, q), b(t, q)                       (mn, n), (mn)
    procedure :: nh_vel_q      !< d(A v + b)/dq                          (mn, n)
    procedure :: nh_gamma      !< (A v + b)_q v + A_t v + b_t            (mn)
    procedure :: nh_atl_q      !< d(A^T lam)/dq                          (n, n)
    procedure :: energy        !< total energy (has_energy only): 1/2 v^T M v + potential
    procedure :: potential     !< potential energy of the applied forces (0)
    procedure :: init          !< constructor of a built-in model from (ipar, rpar)
    ! structured evaluation (see the module header); dense defaults
    procedure :: mass_mul => default_mass_mul           !< M(q) a               (n)
    procedure :: hol_vel                                !< G v + g_t            (mh)
    procedure :: hol_jac_tmul => default_hol_jac_tmul   !< G^T lam              (n)
    procedure :: nh_vel                                 !< A v + b              (mn)
    procedure :: nh_jac_tmul => default_nh_jac_tmul     !< A^T lam              (n)
    procedure :: add_qq => default_add_qq               !< n x n Newton block
    procedure :: add_hol_jac => default_add_hol_jac     !< s G or s G^T
    procedure :: add_hol_vel_q => default_add_hol_vel_q !< s (G v + g_t)_q
    procedure :: add_nh_jac => default_add_nh_jac       !< s A or s A^T
    procedure :: add_nh_vel_q => default_add_nh_vel_q   !< s (A v + b)_q
    procedure :: expect_residual_items                  !< hint: the residual items follow (no-op)
  end type model_t

  abstract interface
    subroutine force_i(self, t, q, v, f)
      import :: model_t, wp
      class(model_t), intent(in) :: self
      real(wp), intent(in) :: t, q(self%n), v(self%n)
      real(wp), intent(out) :: f(self%n)
    end subroutine
  end interface

contains

  pure real(wp) function fd_step(x)
    real(wp), intent(in) :: x
    fd_step = FD_EPS * max(1.0_wp, abs(x))
  end function

  !> Item `it` (IT_*) at (t, q, v) with its extra vector w (a for IT_MASS_A, lam for *_TL;
  !> IT_MASS_DQ_W: D(q, v) w, v standing for mass_dqq's a):
  !> the vector whose central differences are the finite-difference defaults.
  subroutine fd_item(self, it, t, q, v, w, y)
    class(model_t), intent(in) :: self
    integer, intent(in) :: it
    real(wp), intent(in) :: t, q(:), v(:), w(:)
    real(wp), intent(out) :: y(:)
    real(wp), allocatable :: b(:, :), c(:)
    select case (it)
    case (IT_MASS_A)
      allocate(b(self%n, self%n))
      call self%mass(q, b)
      y = matmul(b, w)
    case (IT_MASS_DQ_W)
      allocate(b(self%n, self%n))
      call self%mass_dq(q, v, b)
      y = matmul(b, w)
    case (IT_FORCE)
      call self%force(t, q, v, y)
    case (IT_HOL)
      call self%hol(t, q, y)
    case (IT_HOL_VEL)
      call self%hol_vel(t, q, v, y)
    case (IT_HOL_TL)
      allocate(b(self%mh, self%n))
      call self%hol_jac(t, q, b)
      y = matmul(w, b)
    case (IT_NH_VEL)
      call self%nh_vel(t, q, v, y)
    case (IT_NH_TL)
      allocate(b(self%mn, self%n), c(self%mn))
      call self%nh(t, q, b, c)
      y = matmul(w, b)
    end select
  end subroutine

  !> The central difference of item `it` (fd_item): d(:, j) its derivative by q(j) (wrt BY_Q)
  !> or v(j) (BY_V), or d(:, 1) its derivative by t (BY_T).
  subroutine central_difference(self, it, wrt, t, q, v, w, d)
    class(model_t), intent(in) :: self
    integer, intent(in) :: it, wrt
    real(wp), intent(in) :: t, q(:), v(:), w(:)
    real(wp), intent(out) :: d(:, :)
    real(wp) :: x(self%n), yp(size(d, 1)), ym(size(d, 1)), e, x0
    integer :: j
    if (wrt == BY_T) then
      e = fd_step(t)
      call fd_item(self, it, t + e, q, v, w, yp)
      call fd_item(self, it, t - e, q, v, w, ym)
      d(:, 1) = (yp - ym) / (2 * e)
      return
    end if
    x = merge(q, v, wrt == BY_Q)
    do j = 1, self%n
      x0 = x(j)
      e = fd_step(x0)
      x(j) = x0 + e
      call at(yp)
      x(j) = x0 - e
      call at(ym)
      x(j) = x0            ! restored exactly: the next columns are taken at (q, v) itself
      d(:, j) = (yp - ym) / (2 * e)
    end do
  contains
    subroutine at(y)
      real(wp), intent(out) :: y(:)
      if (wrt == BY_Q) then
        call fd_item(self, it, t, x, v, w, y)
      else
        call fd_item(self, it, t, q, x, w, y)
      end if
    end subroutine
  end subroutine

  !> 0 when rpar fits spec, else 1: one character per entry of rpar (as many entries as
  !> characters), p: the entry must be > 0, n: >= 0, any other character: no condition.
  pure integer function rpar_error(rpar, spec) result(ierr)
    real(wp), intent(in) :: rpar(:)
    character(len=*), intent(in) :: spec
    integer :: i
    ierr = 1
    if (size(rpar) /= len(spec)) return
    do i = 1, size(rpar)
      if (spec(i:i) == 'p' .and. rpar(i) <= 0) return
      if (spec(i:i) == 'n' .and. rpar(i) < 0) return
    end do
    ierr = 0
  end function

  !> The diagonal matrix diag(d).
  pure function diagonal_matrix(d) result(a)
    real(wp), intent(in) :: d(:)
    real(wp) :: a(size(d), size(d))
    integer :: i
    a = 0
    do i = 1, size(d)
      a(i, i) = d(i)
    end do
  end function

  !> M(q) = mconst (a model whose mass depends on q overrides mass).
  subroutine mass(self, q, mq)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n)
    real(wp), intent(out) :: mq(self%n, self%n)
    if (.not. allocated(self%mconst)) error stop 'pyint_model: model defines neither mass nor mconst'
    mq = self%mconst
  end subroutine

  subroutine mass_dq(self, q, a, d)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: d(self%n, self%n)
    d = 0
    if (.not. self%const_mass) call central_difference(self, IT_MASS_A, BY_Q, 0.0_wp, q, q, a, d)
  end subroutine

  !> K(q, a, w) = d/dq [D(q, a) w] (w held fixed), D(q, a) = (M(q) a)_q: the second derivatives
  !> of M that the canonical and dual-variable forms' Newton matrices need (K(q, v, v) there;
  !> fortran/core/hamiltonian.f90, fortran/core/dual_form.f90).  Default: a central difference
  !> of mass_dq; zero for const_mass.
  subroutine mass_dqq(self, q, a, w, k)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n), w(self%n)
    real(wp), intent(out) :: k(self%n, self%n)
    k = 0
    if (.not. self%const_mass) call central_difference(self, IT_MASS_DQ_W, BY_Q, 0.0_wp, q, a, w, k)
  end subroutine

  subroutine force_jac(self, t, q, v, fq, fv)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    fq = 0
    fv = 0
    if (self%const_force) return
    call central_difference(self, IT_FORCE, BY_Q, t, q, v, q, fq)
    call central_difference(self, IT_FORCE, BY_V, t, q, v, q, fv)
  end subroutine

  subroutine hol(self, t, q, g)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: g(self%mh)
    g = 0
    if (self%mh > 0) error stop 'pyint_model: model declares holonomic constraints but does not define hol'
  end subroutine

  subroutine hol_jac(self, t, q, gq)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gq(self%mh, self%n)
    call central_difference(self, IT_HOL, BY_Q, t, q, q, q, gq)
  end subroutine

  subroutine hol_t(self, t, q, gt)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gt(self%mh)
    real(wp) :: d(self%mh, 1)
    d = 0
    if (.not. self%scleronomic) call central_difference(self, IT_HOL, BY_T, t, q, q, q, d)
    gt = d(:, 1)
  end subroutine

  !> G(t,q) v + g_t(t,q): the velocity-level holonomic residual.
  subroutine hol_vel(self, t, q, v, w)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: w(self%mh)
    real(wp) :: gq(self%mh, self%n)
    call self%hol_jac(t, q, gq)
    call self%hol_t(t, q, w)
    w = w + matmul(gq, v)
  end subroutine

  subroutine hol_vel_q(self, t, q, v, d)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mh, self%n)
    call central_difference(self, IT_HOL_VEL, BY_Q, t, q, v, v, d)
  end subroutine

  !> d/dt (G v + g_t) along qdot = v with v held fixed.
  subroutine hol_gamma(self, t, q, v, gam)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mh)
    real(wp) :: d(self%mh, self%n), dt(self%mh, 1)
    call self%hol_vel_q(t, q, v, d)
    call central_difference(self, IT_HOL_VEL, BY_T, t, q, v, v, dt)
    gam = matmul(d, v) + dt(:, 1)
  end subroutine

  subroutine hol_gtl_q(self, t, q, lam, d)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: d(self%n, self%n)
    call central_difference(self, IT_HOL_TL, BY_Q, t, q, q, lam, d)
  end subroutine

  subroutine nh(self, t, q, a, b)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: a(self%mn, self%n), b(self%mn)
    a = 0
    b = 0
    if (self%mn > 0) error stop 'pyint_model: model declares nonholonomic constraints but does not define nh'
  end subroutine

  subroutine nh_vel(self, t, q, v, w)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: w(self%mn)
    real(wp) :: a(self%mn, self%n)
    call self%nh(t, q, a, w)
    w = w + matmul(a, v)
  end subroutine

  subroutine nh_vel_q(self, t, q, v, d)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mn, self%n)
    call central_difference(self, IT_NH_VEL, BY_Q, t, q, v, v, d)
  end subroutine

  !> d/dt (A v + b) along qdot = v with v held fixed.
  subroutine nh_gamma(self, t, q, v, gam)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mn)
    real(wp) :: d(self%mn, self%n), dt(self%mn, 1)
    call self%nh_vel_q(t, q, v, d)
    call central_difference(self, IT_NH_VEL, BY_T, t, q, v, v, dt)
    gam = matmul(d, v) + dt(:, 1)
  end subroutine

  subroutine nh_atl_q(self, t, q, lam, d)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: d(self%n, self%n)
    call central_difference(self, IT_NH_TL, BY_Q, t, q, q, lam, d)
  end subroutine

  !> Kinetic energy 1/2 v^T M(q) v plus the potential.
  real(wp) function energy(self, t, q, v)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp) :: mv(self%n)
    call self%mass_mul(q, v, mv)
    energy = 0.5_wp * dot_product(v, mv) + self%potential(t, q)
  end function

  !> The potential of the applied forces (none by default).
  real(wp) function potential(self, t, q)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    potential = 0
  end function

  !> A built-in model's constructor (fortran/models/registry.f90): sizes, flags and parameters
  !> from ipar, rpar; ierr = 1 on bad parameters.  A model not built from parameters: ierr = 1.
  subroutine init(self, ipar, rpar, ierr)
    class(model_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    ierr = 1
  end subroutine

  !> A hint before the residual items of a point (fortran/core/metrics.f90) are asked: a model
  !> evaluated through Python (callback_model.f90) fetches them in one call.  Others: nothing.
  subroutine expect_residual_items(self)
    class(model_t), intent(in) :: self
  end subroutine

  ! --- structured evaluation: dense defaults ---------------------------------

  !> Consistent acceleration and multipliers at (t, q, v): the index-1 system
  !>   [ M  G^T  A^T ] [ a    ]   [ f          ]
  !>   [ G   0    0  ] [ lh   ] = [ -hol_gamma ]
  !>   [ A   0    0  ] [ ln   ]   [ -nh_gamma  ]
  !> assembled through the structured hooks and solved with `solver`
  !> (pyint_newton_matrix: SOLVER_AUTO picks by size and band): O(nnz) for a
  !> model with structured hooks.  info: 0 ok, 1 singular, 2 solver setup failed.
  subroutine consistent_acceleration(model, t, q, v, solver, a, lam, info)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), v(:)
    integer, intent(in) :: solver
    real(wp), intent(out) :: a(:), lam(:)
    integer, intent(out) :: info
    type(newton_matrix_t) :: nm
    call factored_index1(model, t, q, v, solver, nm, info)
    if (info /= 0) return
    call index1_solution(model, t, q, v, nm, a, lam)
    call nm%release()
  end subroutine

  !> The index-1 matrix at (t, q) (index1_matrix with D = M(q); hol_only: C = G) factored in nm.
  !> info: 0; 1 singular; 2 no solver (nm released on failure).
  subroutine factored_index1(model, t, q, v, solver, nm, info, hol_only, refill)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), v(:)
    integer, intent(in) :: solver
    type(newton_matrix_t), intent(inout) :: nm
    integer, intent(out) :: info
    logical, intent(in), optional :: hol_only, refill
    call index1_matrix(model, t, q, v, .true., solver, nm, info, hol_only, refill)
    if (info /= 0) return
    call nm%factor(info)
    if (info /= 0 .or. nm%out_of_pattern) then
      info = merge(1, 2, info /= 0)
      call nm%release()
    end if
  end subroutine

  !> a and lam at (t, q, v) from the index-1 system whose matrix nm holds factored
  !> (factored_index1): right-hand side index1_rhs.
  subroutine index1_solution(model, t, q, v, nm, a, lam)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), v(:)
    type(newton_matrix_t), intent(inout) :: nm
    real(wp), intent(out) :: a(:), lam(:)
    real(wp) :: x(model%n + model%mh + model%mn)
    call index1_rhs(model, t, q, v, x)
    call nm%solve(x)
    a = x(1:model%n)
    lam = x(model%n + 1:)
  end subroutine

  !> The right-hand side (f, -hol_gamma, -nh_gamma) of the index-1 system at (t, q, v) into x.
  subroutine index1_rhs(model, t, q, v, x)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), v(:)
    real(wp), intent(out) :: x(:)
    integer :: n, mh
    n = model%n; mh = model%mh
    call model%force(t, q, v, x(1:n))
    if (mh > 0) then
      call model%hol_gamma(t, q, v, x(n + 1:n + mh))
      x(n + 1:n + mh) = -x(n + 1:n + mh)
    end if
    if (model%mn > 0) then
      call model%nh_gamma(t, q, v, x(n + mh + 1:))
      x(n + mh + 1:) = -x(n + mh + 1:)
    end if
  end subroutine

  !> A state interpolated between steps made consistent, as pyint.reference does at its outputs:
  !> q projected onto g(t, q) = 0 by M-orthogonal Gauss-Newton (steps d from [M G^T; G 0] [d; mu] =
  !> [0; -g] until max |g| <= 1e-13, at most 50), then v onto G v + g_t = 0, A v + b = 0
  !> (M-orthogonal: [M C^T; C 0] [dv; mu] = [0; -(C v + c_t)]), then a and lam from the index-1
  !> system, whose matrix is the velocity projection's (one factorization for both).  Every matrix
  !> through the structured hooks and `solver`.
  !> The Gauss-Newton steps share one pattern (recorded and analysed once, refilled at each step).
  !> position_only: q alone (v, a, lam untouched; the rank test at a nearby configuration,
  !> fortran/core/reduced_model.f90 drop_redundant_rows).
  !> info: 0; 1 a singular matrix; 2 no solver; 4 the position projection did not converge.
  subroutine impose_constraints(model, t, q, v, solver, a, lam, info, position_only)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t
    real(wp), intent(inout) :: q(:), v(:)
    integer, intent(in) :: solver
    real(wp), intent(out) :: a(:), lam(:)
    integer, intent(out) :: info
    logical, intent(in), optional :: position_only
    real(wp), parameter :: GTOL = 1e-13_wp
    integer, parameter :: MAXIT = 50
    type(newton_matrix_t) :: nm
    real(wp) :: x(model%n + model%mh + model%mn)
    integer :: n, mh, mn, it
    n = model%n; mh = model%mh; mn = model%mn
    info = 0
    if (mh > 0) then
      do it = 0, MAXIT
        call model%hol(t, q, x(n + 1:n + mh))
        if (maxval(abs(x(n + 1:n + mh))) <= GTOL) exit
        if (it == MAXIT .or. .not. all(abs(x(n + 1:n + mh)) <= huge(1.0_wp))) info = 4
        if (info == 0) call factored_index1(model, t, q, v, solver, nm, info, hol_only=.true., refill=it > 0)
        if (info /= 0) then
          call nm%release()
          return
        end if
        x(1:n) = 0
        x(n + 1:n + mh) = -x(n + 1:n + mh)
        call nm%solve(x(1:n + mh))
        q = q + x(1:n)
      end do
      call nm%release()
    end if
    if (present(position_only)) then
      if (position_only) return
    end if
    call factored_index1(model, t, q, v, solver, nm, info)
    if (info /= 0) return
    if (mh + mn > 0) then
      x(1:n) = 0
      if (mh > 0) call model%hol_vel(t, q, v, x(n + 1:n + mh))
      if (mn > 0) call model%nh_vel(t, q, v, x(n + mh + 1:))
      x(n + 1:) = -x(n + 1:)
      call nm%solve(x)
      v = v + x(1:n)
    end if
    call index1_solution(model, t, q, v, nm, a, lam)
    call nm%release()
  end subroutine

  !> The index-1 matrix [D C^T; C 0], C = [G; A] at (t, q), assembled into the fresh nm through
  !> the structured hooks (its pattern recorded, then the solver `solver` set up): D = M(q)
  !> (mass_block) or the identity (the rank test of C, fortran/core/driver.f90); with hol_only
  !> C = G.  info: 0, or 2 when no solver could be set up (nm released).
  subroutine index1_matrix(model, t, q, v, mass_block, solver, nm, info, hol_only, refill)
    class(model_t), intent(in) :: model
    real(wp), intent(in) :: t, q(:), v(:)
    logical, intent(in) :: mass_block
    integer, intent(in) :: solver
    type(newton_matrix_t), intent(inout) :: nm
    integer, intent(out) :: info
    logical, intent(in), optional :: hol_only   !< C = G only (the position projection)
    logical, intent(in), optional :: refill     !< nm holds this matrix's pattern set up: new values only
    real(wp) :: x(model%n + model%mh + model%mn)
    integer :: n, mh, mn, pass, i, first
    n = model%n; mh = model%mh; mn = model%mn
    if (present(hol_only)) then
      if (hol_only) mn = 0
    end if
    x = 0
    info = 0
    first = 1
    if (present(refill)) then
      if (refill) first = 2
    end if
    if (first == 1) then
      call nm%record(n + mh + mn)
    else
      call nm%zero()
    end if
    do pass = first, 2
      if (mass_block) then
        call model%add_qq(t, q, v, x(1:n), x(n + 1:n + mh), x(n + mh + 1:), &
                          [1.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp, 0.0_wp], nm, 0, 0)
      else
        do i = 1, n
          call nm%add(i, i, 1.0_wp)
        end do
      end if
      call model%add_hol_jac(t, q, 1.0_wp, .true., nm, 0, n)
      call model%add_hol_jac(t, q, 1.0_wp, .false., nm, n, 0)
      if (mn > 0) then
        call model%add_nh_jac(t, q, 1.0_wp, .true., nm, 0, n + mh)
        call model%add_nh_jac(t, q, 1.0_wp, .false., nm, n + mh, 0)
      end if
      if (pass == 1) then
        call nm%setup(solver, info)
        if (info /= 0) then
          info = 2
          call nm%release()
          return
        end if
        call nm%zero()
      end if
    end do
  end subroutine

  !> ma = M(q) a
  subroutine default_mass_mul(self, q, a, ma)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: ma(self%n)
    real(wp), allocatable :: mq(:, :)
    allocate(mq(self%n, self%n))
    call self%mass(q, mq)
    ma = matmul(mq, a)
  end subroutine

  !> r = G(t, q)^T lam
  subroutine default_hol_jac_tmul(self, t, q, lam, r)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: r(self%n)
    real(wp), allocatable :: gq(:, :)
    r = 0
    if (self%mh == 0) return
    allocate(gq(self%mh, self%n))
    call self%hol_jac(t, q, gq)
    r = matmul(lam, gq)
  end subroutine

  !> r = A(t, q)^T lam
  subroutine default_nh_jac_tmul(self, t, q, lam, r)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mn)
    real(wp), intent(out) :: r(self%n)
    real(wp), allocatable :: an(:, :), bn(:)
    r = 0
    if (self%mn == 0) return
    allocate(an(self%mn, self%n), bn(self%mn))
    call self%nh(t, q, an, bn)
    r = matmul(lam, an)
  end subroutine

  !> Add the dense (rows x cols) block s*b (or s*b^T) at offset (r0, c0): every entry.
  subroutine add_dense(asm, b, s, trans, r0, c0)
    type(newton_matrix_t), intent(inout) :: asm
    real(wp), intent(in) :: b(:, :), s
    logical, intent(in) :: trans
    integer, intent(in) :: r0, c0
    integer :: i, j
    do j = 1, size(b, 2)
      do i = 1, size(b, 1)
        if (trans) then
          call asm%add(r0 + j, c0 + i, s * b(i, j))
        else
          call asm%add(r0 + i, c0 + j, s * b(i, j))
        end if
      end do
    end do
  end subroutine

  !> asm(r0+1:r0+n, c0+1:c0+n) += c(1) M + c(2) (M a)_q + c(3) f_q + c(4) f_v
  !>                              + c(5) (G^T lh)_q + c(6) (A^T ln)_q
  !> Items with a zero coefficient are not evaluated.
  subroutine default_add_qq(self, t, q, v, a, lh, ln, c, asm, r0, c0)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), a(self%n), lh(self%mh), ln(self%mn), c(6)
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    real(wp), allocatable :: d(:, :), e(:, :)
    integer :: n
    n = self%n
    allocate(d(n, n), e(n, n))
    d = 0
    if (c(1) /= 0) then
      call self%mass(q, e)
      d = d + c(1) * e
    end if
    if (c(2) /= 0 .and. .not. self%const_mass) then
      call self%mass_dq(q, a, e)
      d = d + c(2) * e
    end if
    if (c(3) /= 0 .or. c(4) /= 0) then
      block
        real(wp), allocatable :: fq(:, :), fv(:, :)
        allocate(fq(n, n), fv(n, n))
        call self%force_jac(t, q, v, fq, fv)
        d = d + c(3) * fq + c(4) * fv
      end block
    end if
    if (c(5) /= 0 .and. self%mh > 0) then
      call self%hol_gtl_q(t, q, lh, e)
      d = d + c(5) * e
    end if
    if (c(6) /= 0 .and. self%mn > 0) then
      call self%nh_atl_q(t, q, ln, e)
      d = d + c(6) * e
    end if
    call add_dense(asm, d, 1.0_wp, .false., r0, c0)
  end subroutine

  !> asm += s G (trans false: mh x n block) or s G^T (trans true: n x mh block)
  subroutine default_add_hol_jac(self, t, q, s, trans, asm, r0, c0)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), s
    logical, intent(in) :: trans
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    real(wp), allocatable :: gq(:, :)
    if (self%mh == 0) return
    allocate(gq(self%mh, self%n))
    call self%hol_jac(t, q, gq)
    call add_dense(asm, gq, s, trans, r0, c0)
  end subroutine

  !> asm += s (G v + g_t)_q   (mh x n block)
  subroutine default_add_hol_vel_q(self, t, q, v, s, asm, r0, c0)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), s
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    real(wp), allocatable :: d(:, :)
    if (self%mh == 0) return
    allocate(d(self%mh, self%n))
    call self%hol_vel_q(t, q, v, d)
    call add_dense(asm, d, s, .false., r0, c0)
  end subroutine

  !> asm += s A (trans false: mn x n block) or s A^T (trans true: n x mn block)
  subroutine default_add_nh_jac(self, t, q, s, trans, asm, r0, c0)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), s
    logical, intent(in) :: trans
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    real(wp), allocatable :: an(:, :), bn(:)
    if (self%mn == 0) return
    allocate(an(self%mn, self%n), bn(self%mn))
    call self%nh(t, q, an, bn)
    call add_dense(asm, an, s, trans, r0, c0)
  end subroutine

  !> asm += s (A v + b)_q   (mn x n block)
  subroutine default_add_nh_vel_q(self, t, q, v, s, asm, r0, c0)
    class(model_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), s
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    real(wp), allocatable :: d(:, :)
    if (self%mn == 0) return
    allocate(d(self%mn, self%n))
    call self%nh_vel_q(t, q, v, d)
    call add_dense(asm, d, s, .false., r0, c0)
  end subroutine

end module pyint_model
